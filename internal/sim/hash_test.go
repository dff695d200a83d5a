package sim

import "testing"

// TestPairHashSpreads: the pair hash's residues behave as independent
// draws. An MRC QP's start slot (its plane, modulo the plane count) and T1
// offset come from two salts of it, and every one of the 16 combinations
// on small turns up about equally often over its 496 host pairs; a RoCE
// QP's ECMP hash under another seed groups the pairs onto T1s
// differently, not only under other T1 names. FNV-1a alone failed both:
// its low bits depend only on the low bits of what it read.
func TestPairHashSpreads(t *testing.T) {
	f, p, src := genSource(t, "small")
	hosts, err := SpreadHosts(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	job := func() *Collective { return &Collective{Kind: AllToAll, Hosts: hosts, Bytes: 1 << 20, Iterations: 1} }
	sims := []*Sim{newSim(t, f, src, Options{Seed: 1, Collective: job()}), newSim(t, f, src, Options{Seed: 2, Collective: job()})}
	planes, t1s := uint64(f.Planes), uint64(f.T1Count)
	cells := make([]int, planes*t1s)
	type pair struct{ a, b int }
	var pairs []pair
	t1 := [2]map[pair]int{{}, {}}
	for i := range hosts {
		for j := i + 1; j < len(hosts); j++ {
			pr := pair{i, j}
			pairs = append(pairs, pr)
			s := sims[0]
			a, b := s.hostOf(hosts[i]), s.hostOf(hosts[j])
			first, offset := s.pairHash(a, b, -1, 1)%uint64(f.EV.SetSize), s.pairHash(a, b, -1, 0)%t1s
			cells[first%planes*t1s+offset]++
			for k, s := range sims {
				t1[k][pr] = s.ecmp(s.hostOf(hosts[i]), s.hostOf(hosts[j]), 0, 0)
			}
		}
	}
	want := len(pairs) / len(cells)
	for c, n := range cells {
		if n < want/2 || n > want*2 {
			t.Errorf("start plane %d, T1 offset %d: %d of %d pairs, want about %d", c/int(t1s), c%int(t1s), n, len(pairs), want)
		}
	}
	// Two pairs share a T1 under both seeds or under neither: 100% when
	// the second seed only renames T1s, 62.5% for independent draws.
	agree, total := 0, 0
	for x := 0; x < len(pairs); x += 7 {
		for y := x + 1; y < len(pairs); y += 5 {
			p, q := pairs[x], pairs[y]
			if (t1[0][p] == t1[0][q]) == (t1[1][p] == t1[1][q]) {
				agree++
			}
			total++
		}
	}
	if agree*10 > total*8 {
		t.Errorf("RoCE's ECMP: seeds 1 and 2 group %d of %d pairs of pairs alike, want under 80%%", agree, total)
	}
}
