package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// PlaceholderQuestion stands for the task's question in the first request
// a condition's hash is taken of (FirstRequestSHA256).
const PlaceholderQuestion = "<the question goes here>"

// skillCache is condition A's skill document of a data folder, made once
// (it reads the data: a quarter of a second for tier xl) for both the
// first request's hash and the trials.
type skillCache struct {
	mu     sync.Mutex
	done   bool
	follow bool   // the followLinks it was made with
	dir    string // the folder it was made of
	doc    string
	err    error
}

// skillDocument is condition A's skill document of f's data folder, links
// out of it taken with followLinks.
func (f *Folder) skillDocument(followLinks bool) (string, error) {
	c := &f.skill
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done || c.follow != followLinks || c.dir != f.Dir {
		c.doc, c.err = prefixes.SkillDocument(f.Dir, followLinks)
		c.done, c.follow, c.dir = true, followLinks, f.Dir
	}
	return c.doc, c.err
}

// main is the run's main folder: DataDir, its Transport, and the
// Conditions' prefixes, as syncMain last took them.
func (r *Run) main() *Folder {
	if r.mainFolder == nil { // Execute syncs it before the first trial
		r.syncMain()
	}
	return r.mainFolder
}

// syncMain takes the main folder's DataDir, Transport and prefixes from
// the Run as they are now. Call it only while no trial runs.
func (r *Run) syncMain() {
	if r.mainFolder == nil {
		r.mainFolder = &Folder{}
	}
	f := r.mainFolder
	f.Dir, f.Transport, f.Prefixes = r.DataDir, r.Transport, nil
	for _, c := range r.Conditions {
		f.Prefixes = append(f.Prefixes, c.Prefix)
	}
}

// folderOf is the data folder of the task id: its own, or the main one.
func (r *Run) folderOf(id string) *Folder {
	if f := r.TaskData[id]; f != nil {
		return f
	}
	return r.main()
}

// pinFolder is the folder the conditions' first requests in run.json are
// taken over (FirstRequestSHA256): the main data, or, in a run whose every
// task brings its own, the first task's folder. The requests over the
// other folders differ from it only by what run.json pins of them apart:
// their data's hash and their prefixes' (Spec.DataFolders).
func (r *Run) pinFolder() *Folder {
	if r.DataDir == "" && len(r.Folders) > 0 {
		return r.Folders[0]
	}
	return r.main()
}

// session is the agent's session and configuration for a trial of
// condition ci over the folder f, without its kernel and cells: condition
// A's skill document and data folder (links out of it taken with
// followLinks), or the prefix.
func (r *Run) session(ci int, f *Folder, skill string, followLinks bool) (*agent.Session, agent.Config) {
	cond := r.Conditions[ci]
	p := f.Prefixes[ci]
	sess := &agent.Session{Prefix: p}
	if p == nil {
		sess.Skill, sess.DataDir, sess.FollowLinks = skill, f.Dir, followLinks
	}
	cfg := r.Agent
	cfg.Protocol, cfg.Rules, cfg.Context = cond.Protocol, cond.Rules, cond.Context
	return sess, cfg
}

// FirstRequestSHA256 is the hex SHA-256 of the first request a trial of
// cond sends over the run's pinFolder, with PlaceholderQuestion for the
// question: the session and configuration a trial gets (session), rendered
// by agent.FirstRequest. It takes the stable part of the request: the
// rules, the tools, the framing, and the prefix's code (its cells' outputs
// left empty: they come from a kernel, and run.json pins what makes them,
// the data, the image, the interpreter and the driver) or condition A's
// skill document of the folder, links out of it taken with followLinks.
func (r *Run) FirstRequestSHA256(cond Condition, followLinks bool) (string, error) {
	ci := -1
	for i, c := range r.Conditions {
		if c.Name == cond.Name {
			ci = i
		}
	}
	if ci < 0 {
		return "", fmt.Errorf("condition %s is not one of the run's", cond.Name)
	}
	r.syncMain()
	f := r.pinFolder()
	skill := ""
	if f.Prefixes[ci] == nil {
		var err error
		if skill, err = f.skillDocument(followLinks); err != nil {
			return "", fmt.Errorf("condition %s's skill document: %w", cond.Name, err)
		}
	}
	sess, cfg := r.session(ci, f, skill, followLinks)
	if p := sess.Prefix; p != nil {
		for _, c := range p.Cells {
			sess.Cells = append(sess.Cells, session.Cell{Code: c.Code, From: session.FromPrefix})
		}
	}
	req, err := agent.FirstRequest(sess, cfg, PlaceholderQuestion)
	if err != nil {
		return "", fmt.Errorf("condition %s's first request: %w", cond.Name, err)
	}
	h := sha256.Sum256(req.JSON())
	return hex.EncodeToString(h[:]), nil
}
