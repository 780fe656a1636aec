package report

import (
	"html/template"
	"io"
)

// HTML writes rep as one self-contained page. (First version: the numbers
// only; the chart and the transcripts come next.)
func HTML(w io.Writer, rep *Report, runs []*Run) error {
	return page.Execute(w, rep)
}

var page = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ctxcode report</title></head>
<body><h1>ctxcode report</h1>
<table>{{range .Rows}}<tr><td>{{.Model}}</td><td>{{.Condition}}</td><td>{{.Correct}}/{{.Graded}}</td></tr>{{end}}</table>
</body></html>
`))
