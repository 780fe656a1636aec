package kernel

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/scanner"
	"go/token"
	"go/types"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// How a Go cell is cut up before yaegi sees it.
//
// yaegi evaluates a source text either as a file (when it starts with import,
// func, type, const or var) or as the body of a main function. Notebook cells
// mix the two ("import ...", a helper func, then statements), so the cell is
// split at its top-level statements into segments of one kind each, which are
// evaluated in order. Imports are taken out and handled first (see
// goKernel.importPackage). A final expression statement becomes a segment of
// its own so that its value can be shown. Every segment keeps the cell's line
// numbers through a //line directive, so yaegi's messages and panic lines say
// "In[3]:2:5", as in IPython's "Cell In[3], line 2".

// goSegKind says how a segment of a cell is evaluated.
type goSegKind int

const (
	goSegDecl goSegKind = iota // top-level declarations: func, method, type, const, var
	goSegStmt                  // statements, run in yaegi's global scope
	goSegExpr                  // the cell's final expression statement
)

// goMainName replaces the name of a func main declared in a cell: yaegi runs
// a declared main after every later evaluation, so the cell runs it once
// under this name instead.
const goMainName = "_main"

type goSegment struct {
	kind goSegKind
	src  string // the text, starting at the beginning of its first cell line
	line int    // the cell line src starts on
	file *ast.File
	fset *token.FileSet

	// For goSegExpr: the expression, where it starts, and whether its value
	// is shown (calls such as fmt.Println show nothing).
	expr      string
	exprLine  int
	exprCol   int
	showValue bool
}

// goCellFile is the file name a cell's segments are given for yaegi,
// "In[3]/_.go": yaegi keys imports by the base name of the file a node is
// in, which must stay its default "_.go" for imports to be found.
// goCleanPos turns the name back into "In[3]" in what yaegi reports.
func goCellFile(cell string) string { return cell + "/" + interp.DefaultSourceName }

func goCleanPos(s string) string { return strings.ReplaceAll(s, "/"+interp.DefaultSourceName+":", ":") }

// source is the text handed to yaegi, positioned at the cell's lines.
func (s goSegment) source(cell string) string {
	return fmt.Sprintf("\n//line %s:%d:1\n%s", goCellFile(cell), s.line, s.src)
}

// displaySource wraps the final expression in the display hook. Both the
// call and the expression are positioned, so that a panic or an error in
// either names the cell line.
func (s goSegment) displaySource(cell string) string {
	f := goCellFile(cell)
	return fmt.Sprintf("/*line %s:%d:1*/%s.%s(/*line %s:%d:%d*/%s)", f, s.exprLine, goDisplayPkgName, goDisplayFunc,
		f, s.exprLine, s.exprCol, s.expr)
}

// goImport is one import spec of a cell.
type goImport struct {
	name string // "" for the package's own name, or an alias, "_" or "."
	path string
	pos  string // e.g. In[3]:1:8
	line int
}

type goCellPlan struct {
	imports []goImport
	segs    []goSegment
	names   []string // top-level names the cell declares
}

// goCellError is a problem found before evaluation: a syntax error or a
// construct the kernel does not run.
type goCellError struct {
	line int // cell line, 0 when unknown
	msg  string
}

func (e *goCellError) Error() string { return e.msg }

type goChunk struct {
	start, end int // byte offsets in the cell
	toks       []token.Token
	kind       goSegKind
	isImport   bool
}

// goPlanCell splits a cell into imports and segments and checks their syntax.
func goPlanCell(cell, src string) (*goCellPlan, error) {
	chunks, ok := goChunks(cell, src)
	if !ok {
		// Let the parser explain the scanner's complaint.
		chunks = []goChunk{{start: 0, end: len(src), kind: goSegStmt}}
	}
	if len(chunks) == 0 {
		return &goCellPlan{}, nil
	}

	plan := &goCellPlan{}
	// The final chunk is the value to show if it is an expression statement.
	if last := &chunks[len(chunks)-1]; last.kind == goSegStmt {
		if g, err := goParse(cell, src, last.start, last.end, true); err == nil {
			if body := g.body(); len(body) == 1 {
				if _, ok := body[0].(*ast.ExprStmt); ok {
					last.kind = goSegExpr
				}
			}
		}
	}

	for i := 0; i < len(chunks); {
		c := chunks[i]
		if c.isImport {
			imps, err := goParseImports(cell, src, c.start, c.end)
			if err != nil {
				return nil, err
			}
			plan.imports = append(plan.imports, imps...)
			i++
			continue
		}
		j := i + 1
		if c.kind != goSegExpr {
			for j < len(chunks) && !chunks[j].isImport && chunks[j].kind == c.kind {
				j++
			}
		}
		seg, err := goMakeSegment(cell, src, c.kind, c.start, chunks[j-1].end)
		if err != nil {
			return nil, err
		}
		plan.segs = append(plan.segs, seg...)
		i = j
	}
	for _, s := range plan.segs {
		plan.names = append(plan.names, goTopNames(s)...)
	}
	for _, im := range plan.imports {
		if n := goImportName(im); n != "_" && n != "." {
			plan.names = append(plan.names, n)
		}
	}
	return plan, nil
}

// goChunks cuts a cell at its top-level semicolons (written or implied by
// newlines) and classifies each piece by its first tokens. It reports false
// if the scanner found an error.
func goChunks(cell, src string) ([]goChunk, bool) {
	fset := token.NewFileSet()
	file := fset.AddFile(cell, -1, len(src))
	var s scanner.Scanner
	bad := false
	s.Init(file, []byte(src), func(token.Position, string) { bad = true }, 0)
	var chunks []goChunk
	var cur *goChunk
	depth := 0
	for {
		pos, tok, _ := s.Scan()
		off := file.Offset(pos)
		if tok == token.EOF || tok == token.SEMICOLON && depth == 0 {
			if cur != nil {
				cur.end = off
				if tok == token.EOF {
					cur.end = len(src)
				}
				chunks = append(chunks, *cur)
				cur = nil
			}
			if tok == token.EOF {
				break
			}
			continue
		}
		if cur == nil {
			cur = &goChunk{start: off}
		}
		cur.toks = append(cur.toks, tok)
		switch tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			if depth > 0 {
				depth--
			}
		}
	}
	out := chunks[:0]
	for _, c := range chunks {
		switch c.toks[0] {
		case token.PACKAGE:
			continue // a cell may be written as a whole file; the clause means nothing here
		case token.IMPORT:
			c.isImport = true
		case token.CONST, token.TYPE, token.VAR:
			c.kind = goSegDecl
		case token.FUNC:
			c.kind = goFuncChunkKind(c.toks)
		default:
			c.kind = goSegStmt
		}
		out = append(out, c)
	}
	return out, !bad
}

// goFuncChunkKind tells a func or method declaration from a statement that
// starts with a func literal (such as func() { ... }()).
func goFuncChunkKind(toks []token.Token) goSegKind {
	if len(toks) > 1 && toks[1] == token.IDENT {
		return goSegDecl
	}
	if len(toks) > 1 && toks[1] == token.LPAREN {
		depth := 0
		for i := 1; i < len(toks); i++ {
			switch toks[i] {
			case token.LPAREN:
				depth++
			case token.RPAREN:
				depth--
			}
			if depth == 0 {
				// A method: func (r T) Name( or func (r T) Name[
				if i+2 < len(toks) && toks[i+1] == token.IDENT && (toks[i+2] == token.LPAREN || toks[i+2] == token.LBRACK) {
					return goSegDecl
				}
				break
			}
		}
	}
	return goSegStmt
}

// goSegText returns src[start:end] preceded by blanks for the part of its
// first line before start, so that columns stay those of the cell, and the
// cell line it starts on.
func goSegText(src string, start, end int) (string, int) {
	lineStart := strings.LastIndexByte(src[:start], '\n') + 1
	line := strings.Count(src[:start], "\n") + 1
	return strings.Repeat(" ", start-lineStart) + src[start:end], line
}

// goParsed is a piece of a cell parsed alone, either as a file of
// declarations or as the body of a function, behind a //line directive that
// keeps the cell's line numbers.
type goParsed struct {
	fset   *token.FileSet
	file   *ast.File
	text   string // the piece, as goSegText returns it
	line   int
	prefix int // length of the wrapper text before the piece
}

func goParse(cell, src string, start, end int, body bool) (goParsed, error) {
	text, line := goSegText(src, start, end)
	prefix, suffix := fmt.Sprintf("package main\n//line %s:%d:1\n", cell, line), ""
	if body {
		prefix, suffix = fmt.Sprintf("package main\nfunc _() {\n//line %s:%d:1\n", cell, line), "\n}"
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", prefix+text+suffix, 0)
	if err != nil {
		return goParsed{}, goSyntaxError(err)
	}
	return goParsed{fset: fset, file: f, text: text, line: line, prefix: len(prefix)}, nil
}

// offset is the byte offset of p in the piece's text.
func (g goParsed) offset(p token.Pos) int { return g.fset.PositionFor(p, false).Offset - g.prefix }

// body is the statement list of a piece parsed as a function body.
func (g goParsed) body() []ast.Stmt { return g.file.Decls[0].(*ast.FuncDecl).Body.List }

// goSyntaxError turns a parser error into a goCellError naming the cell line.
func goSyntaxError(err error) error {
	if list, ok := err.(scanner.ErrorList); ok && len(list) > 0 {
		e := list[0]
		msg := e.Error()
		if len(list) > 1 {
			msg += fmt.Sprintf(" (and %d more errors)", len(list)-1)
		}
		return &goCellError{line: e.Pos.Line, msg: msg}
	}
	return &goCellError{msg: err.Error()}
}

func goParseImports(cell, src string, start, end int) ([]goImport, error) {
	g, err := goParse(cell, src, start, end, false)
	if err != nil {
		return nil, err
	}
	var out []goImport
	for _, spec := range g.file.Imports {
		pos := g.fset.Position(spec.Path.Pos())
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, &goCellError{line: pos.Line, msg: fmt.Sprintf("%s: bad import path %s", pos, spec.Path.Value)}
		}
		im := goImport{path: p, pos: pos.String(), line: pos.Line}
		if spec.Name != nil {
			im.name = spec.Name.Name
		}
		out = append(out, im)
	}
	return out, nil
}

func goMakeSegment(cell, src string, kind goSegKind, start, end int) ([]goSegment, error) {
	g, err := goParse(cell, src, start, end, kind != goSegDecl)
	if err != nil {
		return nil, err
	}
	seg := goSegment{kind: kind, src: g.text, line: g.line, file: g.file, fset: g.fset}
	switch kind {
	case goSegDecl:
		segs := []goSegment{seg}
		// yaegi runs a declared func main after every later evaluation:
		// rename it and run it once, right after the declarations.
		for _, d := range g.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Name.Name != "main" {
				continue
			}
			off := g.offset(fd.Name.Pos())
			segs[0].src = segs[0].src[:off] + goMainName + segs[0].src[off+len("main"):]
			at := g.fset.Position(fd.Pos()).Line
			segs = append(segs, goSegment{kind: goSegStmt, src: goMainName + "()", line: at})
		}
		return segs, nil
	case goSegExpr:
		x := g.body()[0].(*ast.ExprStmt).X
		p := g.fset.Position(x.Pos())
		seg.expr = g.text[g.offset(x.Pos()):g.offset(x.End())]
		seg.exprLine, seg.exprCol = p.Line, p.Column
		seg.showValue = goShowsValue(x)
	default:
		for _, st := range g.body() {
			if d, ok := st.(*ast.DeferStmt); ok {
				p := g.fset.Position(d.Pos())
				return nil, &goCellError{line: p.Line, msg: fmt.Sprintf(
					"%s: defer at the top level of a cell is not supported by the Go kernel "+
						"(it would run again after every later cell); put it inside a function", p)}
			}
		}
	}
	return []goSegment{seg}, nil
}

// goShowsValue reports whether the value of a final expression statement is
// shown. Calls of the print family and of builtins without results show
// nothing, as print() shows nothing in IPython.
func goShowsValue(x ast.Expr) bool {
	call, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok {
		return true
	}
	switch fn := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		switch fn.Name {
		case "print", "println", "panic", "close", "delete", "clear", "ANSWER":
			return false
		}
	case *ast.SelectorExpr:
		if pkg, ok := fn.X.(*ast.Ident); ok && pkg.Name == "fmt" {
			switch fn.Sel.Name {
			case "Print", "Printf", "Println", "Fprint", "Fprintf", "Fprintln":
				return false
			}
		}
	}
	return true
}

// goTopNames lists the names a segment declares at the top level.
func goTopNames(s goSegment) []string {
	if s.file == nil {
		return nil
	}
	var names []string
	addGen := func(g *ast.GenDecl) {
		for _, spec := range g.Specs {
			switch sp := spec.(type) {
			case *ast.ValueSpec:
				for _, n := range sp.Names {
					names = append(names, n.Name)
				}
			case *ast.TypeSpec:
				names = append(names, sp.Name.Name)
			}
		}
	}
	switch s.kind {
	case goSegDecl:
		for _, d := range s.file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				addGen(d)
			}
		}
	case goSegStmt:
		for _, st := range s.file.Decls[0].(*ast.FuncDecl).Body.List {
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					for _, l := range st.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							names = append(names, id.Name)
						}
					}
				}
			case *ast.DeclStmt:
				if g, ok := st.Decl.(*ast.GenDecl); ok {
					addGen(g)
				}
			}
		}
	}
	return names
}

// goTypeDecl is a type a segment declares: its name, where, and the text of
// its definition as go/printer prints it.
type goTypeDecl struct {
	name, pos, def string
	line           int
}

// goTypeDecls lists the types a declaration segment declares.
func goTypeDecls(s goSegment) []goTypeDecl {
	if s.kind != goSegDecl || s.file == nil {
		return nil
	}
	var out []goTypeDecl
	for _, d := range s.file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, spec := range g.Specs {
			ts := spec.(*ast.TypeSpec)
			var def strings.Builder
			if ts.TypeParams != nil {
				printer.Fprint(&def, s.fset, ts.TypeParams)
			}
			if ts.Assign.IsValid() {
				def.WriteString("= ")
			}
			printer.Fprint(&def, s.fset, ts.Type)
			p := s.fset.Position(ts.Name.Pos())
			out = append(out, goTypeDecl{name: ts.Name.Name, pos: p.String(), line: p.Line, def: goTokenText(def.String())})
		}
	}
	return out
}

// goTokenText is Go source reduced to its tokens, one space apart and
// without semicolons, so that layout does not count: "struct{ A int }" and
// the same struct written on three lines give the same text.
func goTokenText(src string) string {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("", -1, len(src)), []byte(src), nil, 0)
	var toks []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON {
			continue
		}
		if lit == "" {
			lit = tok.String()
		}
		toks = append(toks, lit)
	}
	return strings.Join(toks, " ")
}

// goImportName is the name an import binds.
func goImportName(im goImport) string {
	if im.name != "" {
		return im.name
	}
	return path.Base(im.path)
}

// goUndefined returns the first identifier of a segment that is declared
// nowhere: not in the segment, not by earlier cells or this one (known), and
// not in Go's universe. yaegi reports such names with misleading messages
// ("constant definition loop", "incomplete type"), so this check, run after
// yaegi refused a segment, gives the plain "undefined: x".
func goUndefined(s goSegment, known func(string) bool) (string, bool) {
	if s.file == nil {
		return "", false
	}
	ids := append([]*ast.Ident(nil), s.file.Unresolved...)
	sort.Slice(ids, func(i, j int) bool { return ids[i].Pos() < ids[j].Pos() })
	for _, id := range ids {
		if id.Name == "_" || types.Universe.Lookup(id.Name) != nil || known(id.Name) {
			continue
		}
		return fmt.Sprintf("%s: undefined: %s", s.fset.Position(id.Pos()), id.Name), true
	}
	return "", false
}

// goLiteralAnswer says whether every ANSWER call of a cell passes a literal
// typed in it (ANSWER(42), ANSWER([]string{"a", "b"})): nothing computed
// the value. The Go kernel does not know which call ran, so one computed
// ANSWER makes the cell's answer not literal.
func goLiteralAnswer(cell, src string) bool {
	plan, err := goPlanCell(cell, src)
	if err != nil {
		return false
	}
	calls, literal := 0, true
	for _, seg := range plan.segs {
		if seg.file == nil {
			continue
		}
		ast.Inspect(seg.file, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "ANSWER" {
				calls++
				literal = literal && len(c.Args) == 1 && !c.Ellipsis.IsValid() && goLiteral(c.Args[0])
			}
			return true
		})
	}
	return calls > 0 && literal
}

// goLiteral says whether e is a literal: a basic literal, a signed number,
// true or false, or a composite literal of literals.
func goLiteral(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.ParenExpr:
		return goLiteral(e.X)
	case *ast.UnaryExpr:
		lit, ok := e.X.(*ast.BasicLit)
		return (e.Op == token.SUB || e.Op == token.ADD) && ok && lit.Kind != token.STRING
	case *ast.Ident:
		return e.Name == "true" || e.Name == "false"
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if !goLiteral(kv.Key) || !goLiteral(kv.Value) {
					return false
				}
			} else if !goLiteral(el) {
				return false
			}
		}
		return true
	}
	return false
}
