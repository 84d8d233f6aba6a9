package stream

import (
	"bytes"
	"sort"
	"strings"
)

// restore gives out, a document merged from the YAML text orig, back what yaml.v3 does not
// keep: the blank lines, and the spacing within lines (columns of comments, "key:   value",
// {a: 1,  b: 2}). Each line of out that is a line of orig but for the width of its spaces is
// written as orig has it, after the blank lines that come before it in orig; a line that
// changed gets the blank lines of the line it replaces. The lines are matched as a patience
// diff does (align). What restore makes is a guess: the caller checks that it reads back as
// the object.
func restore(orig, out []byte) []byte {
	o, w := lines(orig), lines(out)
	match := align(o, w)
	matched := make([]bool, len(o))
	for _, i := range match {
		if i >= 0 {
			matched[i] = true
		}
	}
	var b bytes.Buffer
	b.Grow(len(out) + len(out)/8)
	prev := -1 // the last line of orig written, or replaced
	for j, line := range w {
		i := match[j]
		if i < 0 {
			// A changed line takes the place of the first line of orig after prev, if that
			// did not stay: the blank lines before that one come before it.
			q := prev + 1
			for q < len(o) && strings.TrimSpace(o[q]) == "" {
				q++
			}
			if q < len(o) && !matched[q] {
				writeLines(&b, o[prev+1:q])
				prev = q
			}
			b.WriteString(line)
			continue
		}
		blank := i
		for blank > prev+1 && strings.TrimSpace(o[blank-1]) == "" {
			blank--
		}
		writeLines(&b, o[blank:i+1])
		prev = max(prev, i)
	}
	return b.Bytes()
}

// writeLines writes the lines one after another.
func writeLines(b *bytes.Buffer, lines []string) {
	for _, l := range lines {
		b.WriteString(l)
	}
}

// lines splits text into its lines, each with its newline.
func lines(text []byte) []string {
	var l []string
	for line := range strings.Lines(string(text)) {
		l = append(l, line)
	}
	return l
}

// lineKey is what two lines that match have in common: their indentation, and their words
// one space apart. A blank line has none: blank lines match nothing.
func lineKey(line string) string {
	words := strings.Fields(line)
	if len(words) == 0 {
		return ""
	}
	return line[:len(line)-len(strings.TrimLeft(line, " "))] + strings.Join(words, " ")
}

// align returns, for each line of w, the index of the line of o it matches, or -1. The
// matching keeps the order of both: first the lines that are once in each (the longest run
// of them in the same order), then the lines next to matched ones that match too.
func align(o, w []string) []int {
	ok, wk := keys(o), keys(w)
	count := make(map[string]int, len(o))
	at := make(map[string]int, len(o))
	for i, k := range ok {
		count[k]++
		at[k] = i
	}
	inW := make(map[string]int, len(w))
	for _, k := range wk {
		inW[k]++
	}
	var pairs [][2]int // {i in o, j in w}, j increasing
	for j, k := range wk {
		if k != "" && count[k] == 1 && inW[k] == 1 {
			pairs = append(pairs, [2]int{at[k], j})
		}
	}
	match := make([]int, len(w))
	for j := range match {
		match[j] = -1
	}
	for _, p := range increasing(pairs) {
		match[p[1]] = p[0]
	}
	extend(match, ok, wk)
	return match
}

// keys is the lineKey of each line.
func keys(l []string) []string {
	k := make([]string, len(l))
	for i, line := range l {
		k[i] = lineKey(line)
	}
	return k
}

// increasing is the longest subsequence of pairs whose first elements increase (patience
// sorting, O(n log n)).
func increasing(pairs [][2]int) [][2]int {
	var tails []int // tails[n]: index in pairs of the smallest end of a run of n+1
	back := make([]int, len(pairs))
	for p, pair := range pairs {
		n := sort.Search(len(tails), func(t int) bool { return pairs[tails[t]][0] >= pair[0] })
		back[p] = -1
		if n > 0 {
			back[p] = tails[n-1]
		}
		if n == len(tails) {
			tails = append(tails, p)
		} else {
			tails[n] = p
		}
	}
	run := make([][2]int, len(tails))
	for n, p := len(tails)-1, -1; n >= 0; n-- {
		if p < 0 {
			p = tails[len(tails)-1]
		}
		run[n] = pairs[p]
		p = back[p]
	}
	return run
}

// extend matches the unmatched lines next to matched ones, forward and backward, while their
// keys are equal, the order kept.
func extend(match []int, ok, wk []string) {
	next := nearest(match, len(ok), 1)
	for j := 1; j < len(match); j++ {
		i := match[j-1] + 1
		if match[j-1] >= 0 && match[j] < 0 && i < next[j] && wk[j] != "" && ok[i] == wk[j] {
			match[j] = i
		}
	}
	prev := nearest(match, -1, -1)
	for j := len(match) - 2; j >= 0; j-- {
		i := match[j+1] - 1
		if match[j+1] >= 0 && match[j] < 0 && i > prev[j] && wk[j] != "" && ok[i] == wk[j] {
			match[j] = i
		}
	}
}

// nearest is, for each j, the match of the closest matched line after j (step 1) or before it
// (step -1), or none when there is none. Extending forward (backward) adds matches only before
// (after) the lines it has yet to look at, so it stays true while it does.
func nearest(match []int, none, step int) []int {
	near := make([]int, len(match))
	last := none
	for n := range match {
		j := n
		if step > 0 {
			j = len(match) - 1 - n
		}
		near[j] = last
		if match[j] >= 0 {
			last = match[j]
		}
	}
	return near
}
