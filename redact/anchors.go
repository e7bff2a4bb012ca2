package redact

// anchorTable finds the hints of every pattern in one pass over a text,
// ignoring ASCII case: an Aho–Corasick automaton made a complete DFA, so
// the scan costs one table lookup a byte however many hints there are.
// Before, each hint was its own strings.Index over a lower-cased copy of
// the text; on source code, where "key", "token" and "pass" are common,
// that was most of the time redaction took.
type anchorTable struct {
	// next[state<<8|c] is the state after reading byte c.
	next []uint16
	// ends lists, for each state, the hints that end when it is reached.
	ends [][]hintEnd
	// A state stands for the longest end of the text read that begins a
	// hint: depth is its length, fail the state of the next shorter one
	// (0, the root, for none), and open lists the hint lists (patterns)
	// with a hint that it begins but does not end. A Chat reads them
	// after the last byte: what may still become a hint (opening).
	depth, fail []uint16
	open        [][]int
}

// hintEnd is one hint of one pattern.
type hintEnd struct {
	pattern, len int
}

// anchor is where a hint of a pattern was found.
type anchor struct {
	at, len int
}

func newAnchorTable(hints [][]string) *anchorTable {
	type node struct {
		child [256]int
		fail  int
		ends  []hintEnd
	}
	nodes := []node{{}}
	for p, hs := range hints {
		for _, h := range hs {
			cur := 0
			for i := range len(h) {
				c := lowerByte(h[i])
				if nodes[cur].child[c] == 0 {
					nodes = append(nodes, node{})
					nodes[cur].child[c] = len(nodes) - 1
				}
				cur = nodes[cur].child[c]
			}
			nodes[cur].ends = append(nodes[cur].ends, hintEnd{p, len(h)})
		}
	}
	if len(nodes) > 1<<16 {
		panic("redact: too many hints for the anchor table")
	}
	t := &anchorTable{next: make([]uint16, len(nodes)<<8), ends: make([][]hintEnd, len(nodes)),
		depth: make([]uint16, len(nodes)), fail: make([]uint16, len(nodes)), open: make([][]int, len(nodes))}
	for p, hs := range hints {
		for _, h := range hs {
			cur := 0
			for i := range len(h) - 1 {
				cur = nodes[cur].child[lowerByte(h[i])]
				t.depth[cur] = uint16(i + 1)
				if o := t.open[cur]; len(o) == 0 || o[len(o)-1] != p {
					t.open[cur] = append(o, p)
				}
			}
		}
	}
	// Breadth first, so that a state's fail state is complete before it.
	queue := []int{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		t.ends[s] = append(nodes[s].ends, t.ends[nodes[s].fail]...)
		if s == 0 {
			t.ends[s] = nodes[s].ends
		}
		for c := range 256 {
			child := nodes[s].child[c]
			switch {
			case child != 0:
				if s != 0 {
					nodes[child].fail = int(t.next[nodes[s].fail<<8|c])
				}
				t.next[s<<8|c] = uint16(child)
				queue = append(queue, child)
			case s != 0:
				t.next[s<<8|c] = t.next[nodes[s].fail<<8|c]
			}
		}
	}
	for s := range nodes {
		t.fail[s] = uint16(nodes[s].fail)
	}
	// Upper-case letters go where their lower-case ones go.
	for s := range nodes {
		for c := 'A'; c <= 'Z'; c++ {
			t.next[s<<8|int(c)] = t.next[s<<8|int(c+'a'-'A')]
		}
	}
	return t
}

// scan returns, for each pattern, where its hints occur in s, in the
// order their ends are found, and the state after the last byte.
func (t *anchorTable) scan(s string, patterns int) ([][]anchor, int) {
	out := make([][]anchor, patterns)
	state := 0
	for i := range len(s) {
		state = int(t.next[state<<8|int(s[i])])
		for _, e := range t.ends[state] {
			out[e.pattern] = append(out[e.pattern], anchor{at: i + 1 - e.len, len: e.len})
		}
	}
	return out, state
}

func upperByte(c byte) byte {
	if isLower(c) {
		return c - 'a' + 'A'
	}
	return c
}

func lowerByte(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}
