package prefixes

// Jupyter notebooks: a built prefix exported with its real outputs, and a
// notebook imported back as a prefix.
//
// An exported notebook is nbformat 4.5 (cells carry ids), written the way
// Jupyter writes it: keys sorted, one-space indentation, text as lists of
// lines, a final newline. Export is deterministic: the same prefix and
// cells always give the same bytes (cell ids are "cell-1", "cell-2", ...;
// nothing records a time or a path). Each session cell becomes a code cell
// with execution_count = Result.Count and these outputs, in order:
//
//   - a "stream" output named stdout for Result.Stdout, then one named
//     stderr for Result.Stderr (each only when not empty);
//   - for a failed cell (status error or timeout, with Result.Error): an
//     "error" output with ename, evalue and the compact traceback, one line
//     per list item;
//   - else, for a cell that called ANSWER: a "display_data" output whose
//     text/plain is "ANSWER: <json>", as the transcript shows it (display
//     data rather than a stream, so it stands apart from what the cell
//     printed);
//   - else, for a cell with a value: an "execute_result" whose text/plain is
//     Result.Value.
//
// This is the order and the choice session.Cell.Render makes. The notebook
// metadata holds a kernelspec and language_info (python3, or gophernotes
// for Go) and a "ctxcode" object with the prefix's name, description and
// rules, which import reads back.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/session"
)

// The notebook format export writes.
const (
	nbFormat      = 4
	nbFormatMinor = 5
)

// notebook is an nbformat 4 notebook as export writes it. Fields are in
// alphabetical order so that the JSON has Jupyter's sorted keys.
type notebook struct {
	Cells         []nbCell   `json:"cells"`
	Metadata      nbMetadata `json:"metadata"`
	NBFormat      int        `json:"nbformat"`
	NBFormatMinor int        `json:"nbformat_minor"`
}

type nbMetadata struct {
	Ctxcode      nbCtxcode      `json:"ctxcode"`
	Kernelspec   nbKernelspec   `json:"kernelspec"`
	LanguageInfo nbLanguageInfo `json:"language_info"`
}

// nbCtxcode is the "ctxcode" object of the notebook metadata.
type nbCtxcode struct {
	Description string `json:"description,omitempty"`
	Name        string `json:"name,omitempty"`
	Rules       string `json:"rules,omitempty"`
}

type nbKernelspec struct {
	DisplayName string `json:"display_name"`
	Language    string `json:"language"`
	Name        string `json:"name"`
}

type nbLanguageInfo struct {
	CodemirrorMode    any    `json:"codemirror_mode,omitempty"`
	FileExtension     string `json:"file_extension"`
	Mimetype          string `json:"mimetype"`
	Name              string `json:"name"`
	NBConvertExporter string `json:"nbconvert_exporter,omitempty"`
	PygmentsLexer     string `json:"pygments_lexer"`
}

type nbCell struct {
	CellType       string     `json:"cell_type"`
	ExecutionCount *int       `json:"execution_count"` // null for a cell that never ran
	ID             string     `json:"id"`
	Metadata       struct{}   `json:"metadata"`
	Outputs        []nbOutput `json:"outputs"`
	Source         []string   `json:"source"`
}

// nbOutput is one output. A map, so that its keys come out sorted and a
// null execution_count is still written.
type nbOutput = map[string]any

// notebookLanguages are the kernelspec and language_info of each language.
var notebookLanguages = map[kernel.Language]nbMetadata{
	kernel.Python: {
		Kernelspec: nbKernelspec{DisplayName: "Python 3 (ipykernel)", Language: "python", Name: "python3"},
		LanguageInfo: nbLanguageInfo{
			CodemirrorMode: map[string]any{"name": "ipython", "version": 3}, FileExtension: ".py",
			Mimetype: "text/x-python", Name: "python", NBConvertExporter: "python", PygmentsLexer: "ipython3",
		},
	},
	kernel.Go: {
		Kernelspec:   nbKernelspec{DisplayName: "Go", Language: "go", Name: "gophernotes"},
		LanguageInfo: nbLanguageInfo{FileExtension: ".go", Mimetype: "application/x-golang", Name: "go", PygmentsLexer: "go"},
	},
}

// ExportNotebook writes p's executed cells as a Jupyter notebook (nbformat
// 4.5) with their real outputs; see the top of this file for the mapping.
// The cells are usually Build's; p supplies the language and the metadata.
func ExportNotebook(p *Prefix, cells []session.Cell) ([]byte, error) {
	if p == nil {
		return nil, errors.New("export notebook: no prefix")
	}
	meta, ok := notebookLanguages[p.Language]
	if !ok {
		return nil, fmt.Errorf("export notebook: prefix %s: unknown language %q: expected python or go", p.Name, p.Language)
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("export notebook: prefix %s: no cells to export", p.Name)
	}
	meta.Ctxcode = nbCtxcode{Name: p.Name, Description: p.Description, Rules: p.Rules}
	nb := notebook{Cells: make([]nbCell, 0, len(cells)), Metadata: meta, NBFormat: nbFormat, NBFormatMinor: nbFormatMinor}
	for i, c := range cells {
		nb.Cells = append(nb.Cells, nbCell{
			CellType:       "code",
			ExecutionCount: count(c.Result.Count),
			ID:             "cell-" + strconv.Itoa(i+1),
			Outputs:        outputs(c.Result),
			Source:         NotebookLines(strings.TrimRight(c.Code, "\n")),
		})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(nb); err != nil {
		return nil, fmt.Errorf("export notebook: prefix %s: %w", p.Name, err)
	}
	return b.Bytes(), nil
}

// count is an execution count, null when the cell never ran.
func count(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

// outputs maps a result to notebook outputs, in the order Render shows them.
func outputs(r kernel.Result) []nbOutput {
	out := []nbOutput{}
	for _, s := range []struct{ name, text string }{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		if s.text != "" {
			out = append(out, nbOutput{"output_type": "stream", "name": s.name, "text": NotebookLines(s.text)})
		}
	}
	switch {
	case r.Error != nil && r.Status != kernel.StatusOK:
		tb := strings.TrimRight(r.Error.Traceback, "\n")
		if tb == "" {
			tb = r.Error.Name + ": " + r.Error.Value
		}
		out = append(out, nbOutput{"output_type": "error", "ename": r.Error.Name, "evalue": r.Error.Value,
			"traceback": strings.Split(tb, "\n")})
	case r.Answered():
		out = append(out, nbOutput{"output_type": "display_data", "metadata": struct{}{},
			"data": map[string][]string{"text/plain": NotebookLines("ANSWER: " + string(r.Answer))}})
	case r.Value != "":
		out = append(out, nbOutput{"output_type": "execute_result", "execution_count": count(r.Count), "metadata": struct{}{},
			"data": map[string][]string{"text/plain": NotebookLines(r.Value)}})
	}
	return out
}

// NotebookLines splits s the way Jupyter stores text: each line keeps its
// "\n", except a last line without one.
func NotebookLines(s string) []string {
	out := []string{}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// NotebookError is a notebook that cannot be imported as a prefix.
type NotebookError struct {
	File string
	Msg  string
}

func (e *NotebookError) Error() string { return e.File + ": " + e.Msg }

// nbText is notebook text: a string, or a list of strings to join.
type nbText string

func (t *nbText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = nbText(s)
		return nil
	}
	var parts []string
	if err := json.Unmarshal(b, &parts); err != nil {
		return errors.New("source is neither a string nor a list of strings")
	}
	*t = nbText(strings.Join(parts, ""))
	return nil
}

// ImportNotebook reads a Jupyter notebook (nbformat 4) as a prefix; file
// names it in errors and gives the name when the notebook has none.
//
// It keeps the code cells, in order, and drops their outputs: a prefix's
// outputs are recomputed on every build. Markdown and raw cells are
// skipped, so a notebook's prose becomes nothing; so do empty code cells.
// The name, description and rules come from the "ctxcode" object of the
// notebook metadata that ExportNotebook writes (the name falls back to the
// file's base name); white space in them is collapsed to single spaces,
// since a prefix header holds each on one line. The language comes from
// metadata.kernelspec.language, else metadata.language_info.name, else is
// python. A Cell's Line is 0: a notebook cell has no line in its file.
//
// A code cell with a line that the percent format reads as a cell marker
// ("# %%") is an error, as it could not be written back as one cell.
func ImportNotebook(file string, src []byte) (*Prefix, error) {
	fail := func(format string, args ...any) error {
		return &NotebookError{File: file, Msg: fmt.Sprintf(format, args...)}
	}
	var head struct {
		NBFormat json.RawMessage `json:"nbformat"`
	}
	if err := json.Unmarshal(src, &head); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(src[:min(int(se.Offset), len(src))], []byte("\n"))
			return nil, fail("not JSON (line %d): %v; a Jupyter notebook is a JSON file", line, err)
		}
		return nil, fail("not a Jupyter notebook: expected a JSON object with nbformat, metadata and cells")
	}
	if head.NBFormat == nil {
		return nil, fail("not a Jupyter notebook: it has no nbformat field")
	}
	var version any
	_ = json.Unmarshal(head.NBFormat, &version) // it is valid JSON
	if v, ok := version.(float64); !ok || v != nbFormat {
		return nil, fail("nbformat %s notebook: ctxcode reads nbformat 4; open and save it in a current Jupyter, which writes nbformat 4", head.NBFormat)
	}
	var nb struct {
		Metadata struct {
			Kernelspec struct {
				Language string `json:"language"`
			} `json:"kernelspec"`
			LanguageInfo struct {
				Name string `json:"name"`
			} `json:"language_info"`
			Ctxcode struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Rules       string `json:"rules"`
			} `json:"ctxcode"`
		} `json:"metadata"`
		Cells []struct {
			CellType string `json:"cell_type"`
			Source   nbText `json:"source"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(src, &nb); err != nil {
		return nil, fail("not a valid nbformat 4 notebook: %v", err)
	}
	meta := nb.Metadata
	lang, where := kernel.Python, ""
	switch {
	case meta.Kernelspec.Language != "":
		where = "metadata.kernelspec.language"
		lang = kernel.Language(meta.Kernelspec.Language)
	case meta.LanguageInfo.Name != "":
		where = "metadata.language_info.name"
		lang = kernel.Language(meta.LanguageInfo.Name)
	}
	if where != "" {
		l, err := kernel.ParseLanguage(string(lang))
		if err != nil {
			return nil, fail("the notebook's language is %q (%s); a prefix is written in python or go", lang, where)
		}
		lang = l
	}
	p := &Prefix{
		Name:        oneLine(meta.Ctxcode.Name),
		Language:    lang,
		Description: oneLine(meta.Ctxcode.Description),
		Rules:       oneLine(meta.Ctxcode.Rules),
		Source:      file,
	}
	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	for i, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		code := cellCode(string(c.Source))
		if strings.TrimSpace(code) == "" {
			continue
		}
		for j, line := range strings.Split(code, "\n") {
			if isMarker(strings.TrimSpace(line)) {
				return nil, fail("cell %d, line %d is %q, which a prefix file reads as a cell marker: split the cell there, or change that line", i+1, j+1, strings.TrimSpace(line))
			}
		}
		p.Cells = append(p.Cells, Cell{Code: code})
	}
	if len(p.Cells) == 0 {
		return nil, fail("no code cells (of %d cells; markdown and raw cells are skipped): a prefix needs at least one", len(nb.Cells))
	}
	return p, nil
}

// cellCode trims a cell's code as Parse does: no leading blank lines and
// no leading or trailing newlines.
func cellCode(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	for {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok || strings.TrimSpace(line) != "" {
			break
		}
		s = rest
	}
	return strings.Trim(s, "\n")
}

// oneLine collapses runs of white space, newlines included, to one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// FormatPercent writes p in the percent format, which Parse reads back to
// the same name, language, description, rules and cell code: a header of
// "# name:", "# language:", "# description:" and "# rules:" lines ("//"
// comments for Go; empty description and rules are left out), then each
// cell after a "# %%" line ("// %%" for Go). Header values are written on
// one line each, with white space collapsed. A cell with a line that reads
// as a cell marker cannot be written as one cell; ImportNotebook refuses
// such notebooks.
func FormatPercent(p *Prefix) []byte {
	comment := "#"
	if p.Language == kernel.Go {
		comment = "//"
	}
	var b bytes.Buffer
	header := func(key, val string) {
		if val = oneLine(val); val != "" {
			fmt.Fprintf(&b, "%s %s: %s\n", comment, key, val)
		}
	}
	header("name", p.Name)
	header("language", string(p.Language))
	header("description", p.Description)
	header("rules", p.Rules)
	for _, c := range p.Cells {
		b.WriteString(comment + " %%\n")
		b.WriteString(strings.Trim(c.Code, "\n"))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
