package view

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"
)

// The picture of a message's life is an SVG drawing: a time axis on top, a
// row for the publish, then for each subscription a header row (its own
// marks: expiry, seeks) and one lane per consumer, and a row per topic the
// message was copied to, and for each copy a geo-replicator wrote on another
// cluster a row for its publish there and its subscriptions there. A delivery is a blue disc carrying its redelivery
// count, followed by a bar while the consumer holds the message, and the
// glyph of what ended the hold. The topic's unloads and loads during the
// message's life are a row of their own on top, each a vertical line across
// the lanes, with the time the topic was loaded nowhere shaded.

// Picture geometry, in pixels.
const (
	labelWidth = 190 // the lane labels on the left
	plotWidth  = 780 // the least width of the time axis
	rightPad   = 150 // room after the last mark: "still held" arrows, outcomes
	axisHeight = 34
	rowHeight  = 36
	headHeight = 30
)

// row is one horizontal band of the picture.
type row struct {
	label, title string
	class        string // "row-moves", "row-published", "row-sub", "row-lane", "row-copy"
	attrs        string // data attributes of the row's group
	y            float64
}

// Picture draws the life as an SVG element with data attributes that name
// each lane and mark, for scripts and tests that read the page.
func Picture(l *Life) template.HTML {
	var times []time.Time
	for _, m := range l.Marks {
		times = append(times, m.Time)
	}
	width := float64(plotWidth)
	if n := float64(len(times)) * minGap; n > width {
		width = n
	}
	ax := newAxis(times, labelWidth+24, width-24)
	total := ax.end() + rightPad
	var body strings.Builder
	y := float64(axisHeight)
	next := func(h float64) float64 { c := y + h/2; y += h; return c }

	// The topic's moves.
	var moveXs []float64
	if len(l.Moves) > 0 {
		for _, m := range l.Moves {
			moveXs = append(moveXs, ax.x(m.Time))
		}
		labels := placeMoveLabels(l.Moves, moveXs, total)
		h := movesRowHeight(labels)
		y += h
		cy := y - h + rowHeight/2
		writeRowStart(&body, row{label: "topic", title: "its unloads and loads", class: "row-moves", y: cy}, total)
		for i, m := range l.Moves {
			writeMark(&body, moveXs[i], cy, m, l.Start())
		}
		writeMoveLabels(&body, labels, cy)
		body.WriteString("</g>")
	}

	// The publish row.
	if l.Published.Seq != 0 {
		cy := next(rowHeight)
		writeRowStart(&body, row{label: "published by " + l.Published.Producer, title: "the producer", class: "row-published", y: cy}, total)
		writeMark(&body, ax.x(l.Published.Time), cy, l.Published, l.Start())
		if m := l.TxnEnd; m != nil {
			writeMark(&body, ax.x(m.Time), cy, *m, l.Start())
		}
		body.WriteString("</g>")
	}
	// The subscriptions, on the message's cluster or (cluster set) on a
	// replica's.
	subs := func(subs []*SubLife, cluster string) {
		for _, s := range subs {
			cy := next(headHeight)
			attrs := fmt.Sprintf(` data-sub="%s" data-outcome="%s"`, html.EscapeString(s.Name), s.Outcome.Kind)
			label, title := s.Name, "subscription · "+s.Outcome.Text
			if cluster != "" {
				attrs += fmt.Sprintf(` data-cluster="%s"`, html.EscapeString(cluster))
				label, title = cluster+" · "+s.Name, "subscription on cluster "+cluster+" · "+s.Outcome.Text
			}
			writeRowStart(&body, row{label: label, title: title, class: "row-sub", attrs: attrs, y: cy}, total)
			fmt.Fprintf(&body, `<text class="outcome o-%s" x="%.1f" y="%.1f"><title>%s</title>%s</text>`,
				s.Outcome.Kind, ax.end()+28, cy+4, html.EscapeString(s.Outcome.Text), s.Outcome.Kind)
			for _, m := range s.Marks {
				writeMark(&body, ax.x(m.Time), cy, m, l.Start())
			}
			body.WriteString("</g>")
			for _, ln := range s.Lanes {
				cy := next(rowHeight)
				attrs := fmt.Sprintf(` data-sub="%s" data-consumer="%s"`, html.EscapeString(s.Name), html.EscapeString(ln.Consumer))
				title := "consumer on " + s.Name
				if cluster != "" {
					attrs += fmt.Sprintf(` data-cluster="%s"`, html.EscapeString(cluster))
					title += " of cluster " + cluster
				}
				writeRowStart(&body, row{label: ln.Consumer, title: title, class: "row-lane lane", attrs: attrs, y: cy}, total)
				writeLane(&body, ax, ln, cy, total, l.Start())
				body.WriteString("</g>")
			}
		}
	}
	subs(l.Subs, "")
	for _, c := range l.Copies {
		cy := next(rowHeight)
		what := "dead-letter topic"
		if c.Kind == MarkRetryLetter {
			what = "retry topic"
		}
		attrs := fmt.Sprintf(` data-topic="%s" data-copy="%d:%d" data-copy-index="%d"`, html.EscapeString(c.Copy.Topic),
			c.Copy.Ledger, c.Copy.Entry, c.CopyIndex)
		writeRowStart(&body, row{label: shortTopic(c.Copy.Topic), title: what, class: "row-copy copy", attrs: attrs, y: cy}, total)
		writeMark(&body, ax.x(c.Time), cy, c, l.Start())
		fmt.Fprintf(&body, `<text class="copy-label" x="%.1f" y="%.1f">copy %s</text>`, ax.x(c.Time)+16, cy+4, c.CopyID())
		body.WriteString("</g>")
	}
	// The copies replicators wrote on other clusters: each its publish
	// there, then its subscriptions there.
	for _, r := range l.Replicas {
		cluster := r.Published.Cluster
		cy := next(rowHeight)
		attrs := fmt.Sprintf(` data-cluster="%s" data-copy="%d:%d"`, html.EscapeString(cluster), r.Ledger, r.Entry)
		writeRowStart(&body, row{label: "on cluster " + cluster, title: "the copy " + r.Published.Producer + " wrote",
			class: "row-replica replica", attrs: attrs, y: cy}, total)
		if r.Published.Seq != 0 {
			writeMark(&body, ax.x(r.Published.Time), cy, r.Published, l.Start())
			fmt.Fprintf(&body, `<text class="copy-label" x="%.1f" y="%.1f">copy %d:%d</text>`, ax.x(r.Published.Time)+16, cy+4, r.Ledger, r.Entry)
		}
		body.WriteString("</g>")
		subs(r.Subs, cluster)
	}
	height := y + 8

	var sb strings.Builder
	// The drawing shrinks with a narrow window, down to a width where it
	// scrolls instead.
	fmt.Fprintf(&sb, `<svg class="life" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" style="max-width:%.0fpx;min-width:%.0fpx" role="img" aria-label="life of message %d:%d" data-topic="%s" data-entry="%d:%d">`,
		total, height, total, height, total, min(total, 760), l.Ledger, l.Entry, html.EscapeString(l.Topic), l.Ledger, l.Entry)
	writeAxis(&sb, ax, l.Start(), total, height)
	writeMoveLines(&sb, l.Moves, moveXs, total, height)
	sb.WriteString(body.String())
	sb.WriteString("</svg>")
	return template.HTML(sb.String())
}

// writeRowStart opens a row's group: its band, its label and its track.
func writeRowStart(sb *strings.Builder, r row, total float64) {
	fmt.Fprintf(sb, `<g class="%s"%s>`, r.class, r.attrs)
	label := r.label
	if len([]rune(label)) > 24 {
		label = string([]rune(label)[:23]) + "…"
	}
	fmt.Fprintf(sb, `<text class="label" x="%d" y="%.1f"><title>%s</title>%s</text>`, 12, r.y+4,
		html.EscapeString(r.label+" · "+r.title), html.EscapeString(label))
	fmt.Fprintf(sb, `<line class="track" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f"/>`, labelWidth, r.y, total-4, r.y)
}

// writeAxis draws the time labels and a faint guide at each mark's time.
func writeAxis(sb *strings.Builder, ax *axis, start time.Time, total, height float64) {
	sb.WriteString(`<g class="axis">`)
	fmt.Fprintf(sb, `<line class="axis-line" x1="%d" y1="%d" x2="%.1f" y2="%d"/>`, labelWidth, axisHeight-6, total-4, axisHeight-6)
	lastLabel := -1e9
	for i, t := range ax.times {
		x := ax.xs[i]
		fmt.Fprintf(sb, `<line class="guide" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/>`, x, axisHeight-6, x, height-4)
		if x-lastLabel >= 64 || i == 0 {
			fmt.Fprintf(sb, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, axisHeight-12, since(t.Sub(start)))
			lastLabel = x
		}
	}
	sb.WriteString(`</g>`)
}

// writeMoveLines draws a vertical line across the picture at each move, and
// shades the time from an unload to the next load, when the topic was
// loaded on no broker.
func writeMoveLines(sb *strings.Builder, moves []Mark, xs []float64, total, height float64) {
	if len(moves) == 0 {
		return
	}
	sb.WriteString(`<g class="moves">`)
	for i, m := range moves {
		if m.Kind != MarkUnloaded {
			continue
		}
		end, title := total-4, "the topic is loaded on no broker"
		if i+1 < len(moves) && moves[i+1].Kind == MarkLoaded {
			end = xs[i+1]
			title = "the topic moves: " + m.MoveLabel() + ", " + moves[i+1].MoveLabel()
		}
		fmt.Fprintf(sb, `<rect class="move-band" x="%.1f" y="%d" width="%.1f" height="%.1f"><title>%s</title></rect>`,
			xs[i], axisHeight-6, max(end-xs[i], 0), height-axisHeight+2, html.EscapeString(title))
	}
	for i, m := range moves {
		fmt.Fprintf(sb, `<line class="move-line m-%s" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"/>`, m.Kind, xs[i], axisHeight-6, xs[i], height-4)
	}
	sb.WriteString(`</g>`)
}

// labelCharWidth is about the width of a character of a move's label, for
// placing it, and labelLine the height of a line of labels.
const (
	labelCharWidth = 6.2
	labelLine      = 15
)

// moveLabel is a label of the moves row, placed: x its anchor, line the
// line it is on (0 level with the glyphs, then below).
type moveLabel struct {
	text, anchor string
	x            float64
	line         int
}

// placeMoveLabels says what each move was, for the moves row: an unload and
// the load that follows share one label ("unloaded from broker 0 (crash) ·
// loaded on broker 1"), after the load, else inside the band between them,
// else before the unload, on the first line where it overlaps no glyph or
// other label and stays inside the picture.
func placeMoveLabels(moves []Mark, xs []float64, total float64) []moveLabel {
	type span struct {
		lo, hi float64
		line   int
	}
	var taken []span
	for _, x := range xs { // the glyphs, on the first line
		taken = append(taken, span{x - 10, x + 10, 0})
	}
	free := func(lo, hi float64, line int) bool {
		if lo < labelWidth+4 || hi > total-4 {
			return false
		}
		for _, t := range taken {
			if t.line == line && lo < t.hi+6 && t.lo < hi+6 {
				return false
			}
		}
		return true
	}
	var out []moveLabel
	for i := 0; i < len(moves); i++ {
		text, from, to := moves[i].MoveLabel(), xs[i], xs[i]
		if moves[i].Kind == MarkUnloaded && i+1 < len(moves) && moves[i+1].Kind == MarkLoaded {
			i++
			text, to = text+" · "+moves[i].MoveLabel(), xs[i]
		}
		w := float64(len([]rune(text))) * labelCharWidth
		candidates := []struct{ lo float64 }{{to + 16}, {from + 16}, {from - 16 - w}}
		placed := false
		for line := 0; !placed && line < 8; line++ {
			for j, c := range candidates {
				if j == 1 && c.lo+w > to-16 {
					continue // the band is too narrow for it
				}
				if free(c.lo, c.lo+w, line) {
					taken = append(taken, span{c.lo, c.lo + w, line})
					out = append(out, moveLabel{text, "start", c.lo, line})
					placed = true
					break
				}
			}
		}
		if !placed { // too long for the picture: after the load, cut by its edge
			line := 0
			for _, t := range taken {
				line = max(line, t.line+1)
			}
			taken = append(taken, span{to + 16, to + 16 + w, line})
			out = append(out, moveLabel{text, "start", max(labelWidth+4, min(to+16, total-4-w)), line})
		}
	}
	return out
}

// movesRowHeight is the height of the moves row with its labels.
func movesRowHeight(labels []moveLabel) float64 {
	lines := 1
	for _, l := range labels {
		lines = max(lines, l.line+1)
	}
	return rowHeight + float64(lines-1)*labelLine
}

// writeMoveLabels writes the moves row's labels, cy being the glyphs' line.
func writeMoveLabels(sb *strings.Builder, labels []moveLabel, cy float64) {
	for _, l := range labels {
		fmt.Fprintf(sb, `<text class="move-label" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`,
			l.x, cy+4+float64(l.line)*labelLine, l.anchor, html.EscapeString(l.text))
	}
}

// writeLane draws a consumer's deliveries, their holds and their ends.
func writeLane(sb *strings.Builder, ax *axis, ln *Lane, cy, total float64, start time.Time) {
	for _, d := range ln.Deliveries {
		x0 := ax.x(d.At.Time)
		x1 := total - 12
		if d.End != nil {
			x1 = ax.x(d.End.Time)
		}
		cls := "hold"
		if d.End == nil {
			cls = "hold open"
		}
		fmt.Fprintf(sb, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="8" rx="4"/>`, cls, x0, cy-4, max(x1-x0, 0))
		if d.End == nil {
			fmt.Fprintf(sb, `<path class="held-arrow" d="M%.1f %.1f l8 6 l-8 6 z"/>`, x1, cy-6)
		}
	}
	// Ends first, so a delivery that follows at the same spot draws on top.
	for _, d := range ln.Deliveries {
		if d.End != nil {
			writeMark(sb, ax.x(d.End.Time), cy, *d.End, start)
		}
	}
	for _, m := range ln.Acks {
		writeMark(sb, ax.x(m.Time), cy, m, start)
	}
	for _, d := range ln.Deliveries {
		writeMark(sb, ax.x(d.At.Time), cy, d.At, start)
	}
}

// writeMark draws one mark's glyph at (x, y), with its sentence as tooltip.
func writeMark(sb *strings.Builder, x, y float64, m Mark, start time.Time) {
	attrs, when := "", since(m.Time.Sub(start))
	if m.Kind == MarkDelivered {
		attrs = fmt.Sprintf(` data-count="%d"`, m.Count)
	}
	if m.Kind == MarkUnloaded || m.Kind == MarkLoaded {
		attrs += fmt.Sprintf(` data-reason="%s"`, html.EscapeString(m.Reason))
	}
	if m.Clustered {
		attrs += fmt.Sprintf(` data-broker="%d"`, m.Broker)
	}
	if m.Cluster != "" {
		attrs += fmt.Sprintf(` data-cluster="%s"`, html.EscapeString(m.Cluster))
	}
	if w := m.Where(); w != "" {
		when += " · " + w
	}
	fmt.Fprintf(sb, `<g class="mark m-%s" data-kind="%s"%s data-seq="%d" transform="translate(%.1f %.1f)"><title>%s · %s</title>`,
		m.Kind, m.Kind, attrs, m.Seq, x, y, when, html.EscapeString(m.Sentence()))
	sb.WriteString(glyph(m))
	sb.WriteString(`</g>`)
}

// glyph returns the shape of a mark, centred on the origin.
func glyph(m Mark) string {
	switch m.Kind {
	case MarkPublished:
		return `<circle r="6"/>`
	case MarkDelivered:
		return fmt.Sprintf(`<circle r="11"/><text y="4" text-anchor="middle">%d</text>`, m.Count)
	case MarkAcked:
		return `<circle r="9"/><path class="ink" d="M-4 0.5 L-1.2 3.3 L4.2 -2.8"/>`
	case MarkAsked:
		return `<circle r="9"/><path class="ink" d="M3.6 -1.8 A4.2 4.2 0 1 0 3.4 2.6"/><path class="ink-fill" d="M1.6 -3.9 L5.4 -3.2 L4.4 0.3 z"/>`
	case MarkCrashed:
		return `<circle r="9"/><path class="ink" d="M-3.5 -3.5 L3.5 3.5 M3.5 -3.5 L-3.5 3.5"/>`
	case MarkClosed:
		return `<circle r="9"/><rect class="ink-fill" x="-3.2" y="-3.2" width="6.4" height="6.4"/>`
	case MarkBrokerClosed:
		return `<circle r="9"/><rect class="ink-fill" x="-3.2" y="-3.2" width="6.4" height="6.4"/><path class="ink" d="M-6 6 L6 -6"/>`
	case MarkExpired:
		return `<circle r="9"/><path class="ink-fill" d="M-3.6 -4.4 H3.6 L0 0 L3.6 4.4 H-3.6 L0 0 z"/>`
	case MarkSeek:
		return `<circle r="9"/><path class="ink-fill" d="M-4.4 0 L1 -4.2 V4.2 z"/><rect class="ink-fill" x="1.6" y="-4.2" width="2.2" height="8.4"/>`
	case MarkDeadLetter, MarkRetryLetter:
		return `<rect x="-8" y="-8" width="16" height="16" rx="2" transform="rotate(45)"/>`
	case MarkTxnAcked:
		return `<circle r="9" stroke-dasharray="3 2"/><path class="ink" d="M-4 0.5 L-1.2 3.3 L4.2 -2.8"/>`
	case MarkTxnReturned:
		return `<circle r="9" stroke-dasharray="3 2"/><path class="ink" d="M3.6 -1.8 A4.2 4.2 0 1 0 3.4 2.6"/>`
	case MarkTxnCommitted:
		return `<rect x="-6" y="-6" width="12" height="12"/><path class="ink" d="M-3.5 0.5 L-1 3 L3.8 -2.4"/>`
	case MarkTxnAborted:
		return `<rect x="-6" y="-6" width="12" height="12"/><path class="ink" d="M-3 -3 L3 3 M3 -3 L-3 3"/>`
	case MarkUnloaded:
		return `<rect x="-8" y="-8" width="16" height="16" rx="3"/><path class="ink" d="M0 -4 V3 M-3.4 0.2 L0 3.6 L3.4 0.2"/>`
	case MarkLoaded:
		return `<rect x="-8" y="-8" width="16" height="16" rx="3"/><path class="ink" d="M0 4 V-3 M-3.4 -0.2 L0 -3.6 L3.4 -0.2"/>`
	}
	return `<circle r="6"/>`
}

// legendItems are the glyphs a picture uses, with what each means.
var legendItems = []struct {
	Mark Mark
	Text string
}{
	{Mark{Kind: MarkPublished}, "published"},
	{Mark{Kind: MarkDelivered, Count: 0}, "delivered, with its redelivery count"},
	{Mark{Kind: MarkAcked}, "acked"},
	{Mark{Kind: MarkAsked}, "redelivery asked (a nack or an ack timeout: the broker cannot tell them apart)"},
	{Mark{Kind: MarkCrashed}, "connection dropped (a crash)"},
	{Mark{Kind: MarkClosed}, "consumer closed by the client"},
	{Mark{Kind: MarkBrokerClosed}, "consumer closed by the broker"},
	{Mark{Kind: MarkExpired}, "expired by message TTL"},
	{Mark{Kind: MarkSeek}, "subscription reset by a seek"},
	{Mark{Kind: MarkDeadLetter}, "copy on a dead-letter or retry topic"},
	{Mark{Kind: MarkTxnAcked}, "acked in a transaction (held until it ends)"},
	{Mark{Kind: MarkTxnReturned}, "given back by the transaction's abort"},
	{Mark{Kind: MarkTxnCommitted}, "the producing transaction committed"},
	{Mark{Kind: MarkTxnAborted}, "the producing transaction aborted"},
	{Mark{Kind: MarkUnloaded}, "the topic unloaded from its broker (an unload, a stop, a crash)"},
	{Mark{Kind: MarkLoaded}, "the topic loaded on a broker, from the store"},
}

// Legend draws the glyphs and what they mean, as HTML.
func Legend() template.HTML {
	var sb strings.Builder
	sb.WriteString(`<ul class="legend">`)
	for _, it := range legendItems {
		fmt.Fprintf(&sb, `<li><svg class="glyph" viewBox="-13 -13 26 26" width="20" height="20"><g class="mark m-%s">%s</g></svg>%s</li>`,
			it.Mark.Kind, glyph(it.Mark), html.EscapeString(it.Text))
	}
	sb.WriteString(`<li><svg class="glyph" viewBox="0 -13 40 26" width="30" height="20"><rect class="hold" x="2" y="-4" width="36" height="8" rx="4"/></svg>held by the consumer</li>`)
	sb.WriteString(`</ul>`)
	return template.HTML(sb.String())
}

// shortTopic drops the "persistent://public/default/" of a topic name.
func shortTopic(name string) string {
	if s, ok := strings.CutPrefix(name, "persistent://public/default/"); ok {
		return s
	}
	return strings.TrimPrefix(name, "persistent://")
}
