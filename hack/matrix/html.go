package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
)

// matrixTemplateText is the page's template (matrix.html.tmpl).
//
//go:embed matrix.html.tmpl
var matrixTemplateText string

// matrixTemplate is the parsed page template.
var matrixTemplate = template.Must(template.New("matrix").Parse(matrixTemplateText))

// htmlMatrix renders the matrix as one self-contained page (no script, no
// network): each column's counts, the differences between columns first,
// then the grid of specs × columns, cells coloured by outcome. A column not
// applicable is in the list of columns, saying why, but not in the grid.
func htmlMatrix(cols []column) ([]byte, error) {
	g := newGrid(cols)
	type htmlColumn struct {
		Name, Error, NotApplicable string
		Passed, Failed, Skipped    int
		Seconds                    float64
	}
	type htmlCell struct {
		gridCell
		Ran         bool
		Text, Title string
	}
	type htmlRow struct {
		Spec    string
		Differs bool
		Cells   []htmlCell
	}
	type section struct {
		Title string
		Rows  []htmlRow
	}
	differs := map[string]bool{}
	toRows := func(rows []gridRow) []htmlRow {
		var out []htmlRow
		for _, r := range rows {
			hr := htmlRow{Spec: r.Spec, Differs: differs[r.Spec]}
			for _, c := range r.Cells {
				hc := htmlCell{gridCell: c, Ran: c.ran()}
				switch c.Kind {
				case "did-not-run":
					hc.Text = "did not run"
				case "missing":
					hc.Text = "-"
				case "skipped":
					hc.Text = "skipped"
				default:
					hc.Text = fmt.Sprintf("%s r=%d", map[bool]string{true: "pass", false: "FAIL"}[c.Kind == "pass"], c.Reinits)
					hc.Title = c.Label + ": re-initialisations " + c.ByCause
					if c.Failure != "" {
						hc.Title += "\n" + c.Failure
					}
				}
				hr.Cells = append(hr.Cells, hc)
			}
			out = append(out, hr)
		}
		return out
	}
	var sections []section
	for _, d := range []struct {
		title string
		rows  []gridRow
	}{{outcomeDiffersTitle, g.outcomeDiffers}, {causesDifferTitle, g.causesDiffer}} {
		for _, r := range d.rows {
			differs[r.Spec] = true
		}
		if len(d.rows) > 0 {
			sections = append(sections, section{Title: d.title, Rows: toRows(d.rows)})
		}
	}
	var columns, gridColumns []htmlColumn
	for _, c := range g.cols {
		gridColumns = append(gridColumns, htmlColumn{Name: c.name()})
	}
	for _, c := range cols {
		hc := htmlColumn{Name: c.name(), Error: c.Error, NotApplicable: c.NotApplicable, Seconds: c.Seconds}
		for _, cl := range c.Cells {
			switch cl.Outcome {
			case "passed":
				hc.Passed++
			case "skipped":
				hc.Skipped++
			default:
				hc.Failed++
			}
		}
		columns = append(columns, hc)
	}
	var b bytes.Buffer
	err := matrixTemplate.Execute(&b, struct {
		Columns, GridColumns []htmlColumn
		Differences          []section
		Rows                 []htmlRow
	}{columns, gridColumns, sections, toRows(g.rows)})
	return b.Bytes(), err
}
