package sim

import (
	"testing"
	"time"
)

// TestChoosePrefetching: a run prefetches from 128 hosts on (its flows'
// ends), on every worker, and not below.
func TestChoosePrefetching(t *testing.T) {
	for _, c := range []struct {
		preset  string
		hosts   int
		workers int
		want    bool
	}{{"small", 0, 1, false}, {"mrc-1k", 127, 2, false}, {"mrc-1k", 128, 1, true}, {"mrc-1k", 128, 2, true}} {
		f, p, src := genSource(t, c.preset)
		hosts, err := SpreadHosts(p, c.hosts)
		if err != nil {
			t.Fatal(err)
		}
		s := newSim(t, f, src, Options{Flows: Permutation(hosts, 1<<20, 0, 1), Seed: 1, Workers: c.workers, Limit: time.Microsecond})
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		for w, sh := range s.shards {
			if sh.prefetching != c.want {
				t.Errorf("%s, %d hosts: worker %d of %d prefetching %v, want %v", c.preset, len(hosts), w, len(s.shards), sh.prefetching, c.want)
			}
		}
	}
}
