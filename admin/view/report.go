package view

import (
	"bufio"
	"html/template"
	"io"
)

// stylesheet returns the view's style sheet, for a report to inline.
func stylesheet() template.CSS {
	css, err := assets.ReadFile("assets/static/view.css")
	if err != nil {
		panic(err) // embedded at build time
	}
	return template.CSS(css)
}

// WriteReport writes r as one self-contained HTML file: the style sheet is
// inline, the pictures are inline SVG, and nothing is loaded from elsewhere.
func WriteReport(w io.Writer, r Report) error {
	bw := bufio.NewWriter(w)
	if err := pages["report"].ExecuteTemplate(bw, "report.html", r); err != nil {
		return err
	}
	return bw.Flush()
}
