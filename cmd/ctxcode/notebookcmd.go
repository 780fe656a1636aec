package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
)

// exportOptions are the flags of `ctxcode prefix export`: those of show and
// verify, and the notebook to write.
type exportOptions struct {
	*prefixOptions
	out   string
	force bool
}

func parseExport(args []string, stderr io.Writer) (*exportOptions, error) {
	o := &exportOptions{}
	var err error
	o.prefixOptions, err = parsePrefix("export", args, stderr, func(fs *flagSet) {
		fs.StringVar(&o.out, "out", "", "export: the notebook to write, F.ipynb (required)")
		fs.BoolVar(&o.force, "force", false, "export: overwrite --out if it exists")
	})
	if err != nil {
		return nil, err
	}
	if o.out == "" {
		return nil, usagef("prefix export: --out is required: the notebook to write (F.ipynb)")
	}
	if !strings.EqualFold(filepath.Ext(o.out), ".ipynb") {
		return nil, usagef("prefix export: --out %s does not end in .ipynb, the extension Jupyter opens notebooks by", o.out)
	}
	if err := checkOutput("prefix export", o.out, o.force); err != nil {
		return nil, err
	}
	if err := needData("prefix export", o.prefix, o.dataDir); err != nil {
		return nil, err
	}
	return o, nil
}

// run builds the prefix in a fresh kernel and writes the notebook.
func (o *exportOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	cells, err := o.execute(ctx, stderr)
	if err != nil {
		return err
	}
	nb, err := prefixes.ExportNotebook(o.prefix, cells)
	if err != nil {
		return err
	}
	if err := writeAtomic("prefix export", o.out, nb, o.force); err != nil {
		return err
	}
	ext := ".py"
	if o.prefix.Language == kernel.Go {
		ext = ".go"
	}
	fmt.Fprintf(stdout, "wrote %s (%d cells); open it in Jupyter, or turn it back into a prefix file with: ctxcode prefix import %s --out %s%s\n",
		o.out, len(cells), o.out, o.prefix.Name, ext)
	return nil
}

// importOptions are the flags of `ctxcode prefix import`.
type importOptions struct {
	file  string
	out   string
	force bool
}

func parseImport(args []string, stderr io.Writer) (*importOptions, error) {
	o := &importOptions{}
	fs := newFlagSet("prefix import", prefixUsage, stderr)
	fs.StringVar(&o.out, "out", "", "file to write (default: standard output)")
	fs.BoolVar(&o.force, "force", false, "overwrite --out if it exists")
	// The notebook may stand anywhere among the flags: ctxcode prefix import F.ipynb --out F.py.
	if err := fs.parse(args, 1, "one notebook"); err != nil {
		return nil, err
	}
	o.file = fs.Arg(0)
	if o.file == "" {
		return nil, usagef("prefix import: name the notebook to import (F.ipynb)")
	}
	if o.out != "" {
		if err := checkOutput("prefix import", o.out, o.force); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// run reads the notebook and prints or writes it as a percent-format prefix.
func (o *importOptions) run(stdout io.Writer) error {
	src, err := os.ReadFile(o.file)
	if err != nil {
		return usagef("prefix import: %v", err)
	}
	p, err := prefixes.ImportNotebook(o.file, src)
	if err != nil {
		return usagef("prefix import: %v", err)
	}
	text := prefixes.FormatPercent(p)
	if o.out == "" {
		_, err = stdout.Write(text)
		return err
	}
	if err := writeAtomic("prefix import", o.out, text, o.force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d cells); check it with: ctxcode prefix verify %s --data DIR\n", o.out, len(p.Cells), o.out)
	return nil
}
