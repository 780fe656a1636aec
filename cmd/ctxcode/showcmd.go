package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// placeholderQuestion stands where a task's question goes when show is
// given none.
const placeholderQuestion = "<the question goes here>"

type showOptions struct {
	*prefixOptions
	protocol string
	question string
	budget   int
	json     bool
}

func parseShow(args []string, stderr io.Writer) (*showOptions, error) {
	o := &showOptions{}
	var err error
	o.prefixOptions, err = parsePrefix("show", args, stderr, func(fs *flagSet) {
		fs.StringVar(&o.protocol, "protocol", "", "render as the model sees it: bare (D), eval (B, B0), transcript (C), cli (A), or all for a table of token counts; default: the session as In/Out cells")
		fs.StringVar(&o.question, "question", "", "the question to render after the prefix (default: a placeholder)")
		fs.IntVar(&o.budget, "output-budget", session.DefaultBudget, "characters of output per cell the model sees (head and tail are kept); -1: no limit")
		fs.BoolVar(&o.json, "json", false, "with --protocol: print the request (messages and tools) as JSON")
	})
	if err != nil {
		return nil, err
	}
	if o.protocol != "" && o.protocol != "all" {
		if _, err := session.ParseProtocol(o.protocol); err != nil {
			return nil, usagef("--protocol: %v, or all", err)
		}
	}
	if o.json && (o.protocol == "" || o.protocol == "all") {
		return nil, usagef("--json prints one request: name its --protocol (bare, eval, transcript or cli)")
	}
	if o.budget == 0 {
		return nil, usagef("--output-budget 0 would show the model nothing: give a number of characters, or -1 for no limit")
	}
	if o.question == "" {
		o.question = placeholderQuestion
	}
	if o.protocol == string(session.CLI) && o.dataDir == "" {
		return nil, usagef("--protocol cli shows the skill document of --data DIR: give the data folder")
	}
	if err := needData("prefix show", o.prefix, o.dataDir); err != nil {
		return nil, err
	}
	return o, nil
}

func runPrefixShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseShow(args, stderr)
	if err != nil {
		return err
	}
	enc := session.Encoding(o.encoding)
	var cells []session.Cell
	if o.protocol != string(session.CLI) {
		if cells, err = o.execute(ctx, stderr); err != nil {
			return err
		}
	}
	if o.protocol == "" {
		text := session.RenderCells(cells)
		tokens, err := session.CountTokens(enc, text)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, text)
		fmt.Fprintf(stdout, "\n[prefix %s: %d cells, %d tokens (%s) as In/Out text]\n", o.prefix.Name, len(cells), tokens, enc)
		return nil
	}
	protocols := session.Protocols()
	if o.protocol != "all" {
		protocols = []session.Protocol{session.Protocol(o.protocol)}
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', tabwriter.AlignRight)
	if o.protocol == "all" {
		fmt.Fprintf(stdout, "prefix %s, one request with the question %q, counted in %s:\n", o.prefix.Name, o.question, enc)
		fmt.Fprintln(tw, "protocol\tconditions\tmessages\ttools\ttokens\t")
	}
	for _, p := range protocols {
		// The first request Run would send, as agent.FirstRequest renders it.
		s := &agent.Session{Prefix: o.prefix, Cells: cells}
		if p == session.CLI {
			if o.dataDir == "" {
				return usagef("--protocol cli shows the skill document of --data DIR: give the data folder")
			}
			skill, err := prefixes.SkillDocument(o.dataDir, o.sandbox.followLinks)
			if err != nil {
				return usagef("skill document: %v", err)
			}
			s = &agent.Session{Skill: skill}
		}
		req, err := agent.FirstRequest(s, agent.Config{Protocol: p, OutputBudget: o.budget}, o.question)
		if err != nil {
			return err
		}
		tokens, err := session.CountRequest(enc, req)
		if err != nil {
			return err
		}
		switch {
		case o.protocol == "all":
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t\n", p, strings.Join(agent.ConditionsOf(p), ", "), len(req.Messages), len(req.Tools), tokens)
		case o.json:
			_, err = stdout.Write(req.JSON())
			return err
		default:
			fmt.Fprint(stdout, req.Text())
			fmt.Fprintf(stdout, "\n[prefix %s, protocol %s: %d messages, %d tools, %d tokens (%s) with this question, framing and tool schemas included]\n",
				o.prefix.Name, p, len(req.Messages), len(req.Tools), tokens, enc)
		}
	}
	return tw.Flush()
}
