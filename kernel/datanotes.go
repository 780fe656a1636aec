package kernel

import (
	"fmt"
	"path/filepath"
)

// maxDataNotes bounds the lines DataNotes gives one by one; the rest are
// counted on one more line.
const maxDataNotes = 20

// DataNotes says, one line per entry, what of the data folder dir no
// kernel sees, and so no model is told of (links that lead out of it,
// links to folders, named pipes, sockets, devices, files that cannot be
// read), and, with follow, which links out of it are taken: at most
// maxDataNotes lines and one that counts the rest. A warning begins
// "warning: "; a link taken begins "--follow-links: ". A folder that
// cannot be walked gets no line here: what needs it says why.
func DataNotes(dir string, follow bool) []string {
	var lines []string
	more := 0
	add := func(line string) {
		if len(lines) < maxDataNotes {
			lines = append(lines, line)
		} else {
			more++
		}
	}
	_ = WalkReadOnly(dir, WalkOptions{FollowLinks: follow, Skipped: func(s DataSkip) {
		line := fmt.Sprintf("warning: skipped %s: %s; no kernel sees it", filepath.Join(dir, s.Rel), s.Why)
		if s.Outside {
			line += " (--follow-links takes it)"
		}
		add(line)
	}}, func(e DataEntry) error {
		if e.Outside {
			add(fmt.Sprintf("--follow-links: took %s, a link to %s, outside the data folder", filepath.Join(dir, e.Rel), e.Link))
		}
		return nil
	})
	if more > 0 {
		lines = append(lines, fmt.Sprintf("and %d more entries of %s like these", more, dir))
	}
	return lines
}
