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

// skillCache is condition A's skill document of a Run's data folder,
// made once (it reads the data: a quarter of a second for tier xl) for
// both the first request's hash and the trials.
type skillCache struct {
	mu     sync.Mutex
	done   bool
	follow bool // the followLinks it was made with
	doc    string
	err    error
}

// skillDocument is condition A's skill document of r's data folder, links
// out of it taken with followLinks.
func (r *Run) skillDocument(followLinks bool) (string, error) {
	c := &r.skill
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done || c.follow != followLinks {
		c.doc, c.err = prefixes.SkillDocument(r.DataDir, followLinks)
		c.done, c.follow = true, followLinks
	}
	return c.doc, c.err
}

// session is the agent's session and configuration for a trial of cond,
// without its kernel and cells: condition A's skill document and data
// folder (links out of it taken with followLinks), or the prefix.
func (r *Run) session(cond Condition, skill string, followLinks bool) (*agent.Session, agent.Config) {
	sess := &agent.Session{Prefix: cond.Prefix}
	if cond.Prefix == nil {
		sess.Skill, sess.DataDir, sess.FollowLinks = skill, r.DataDir, followLinks
	}
	cfg := r.Agent
	cfg.Protocol, cfg.Rules = cond.Protocol, cond.Rules
	return sess, cfg
}

// FirstRequestSHA256 is the hex SHA-256 of the first request a trial of
// cond sends, with PlaceholderQuestion for the question: the session and
// configuration a trial gets (session), rendered by agent.FirstRequest. It
// takes the stable part of the request: the rules, the tools, the framing,
// and the prefix's code (its cells' outputs left empty: they come from a
// kernel, and run.json pins what makes them, the data, the image, the
// interpreter and the driver) or condition A's skill document of r's data
// folder, links out of it taken with followLinks.
func (r *Run) FirstRequestSHA256(cond Condition, followLinks bool) (string, error) {
	skill := ""
	if cond.Prefix == nil {
		var err error
		if skill, err = r.skillDocument(followLinks); err != nil {
			return "", fmt.Errorf("condition %s's skill document: %w", cond.Name, err)
		}
	}
	sess, cfg := r.session(cond, skill, followLinks)
	if p := cond.Prefix; p != nil {
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
