package emit

import (
	"math/rand/v2"
	"testing"
)

// The NIC program's PSN modulo (a multiply and a shift: BMv2 has no
// runtime %) must equal psn % A for every 24-bit PSN: exhaustively for the
// default A = 3, and for every A the fabric allows at the PSNs around each
// multiple of A near the top of the range (where the error term is
// largest) and at random ones.
func TestPSNMod(t *testing.T) {
	for psn := uint32(0); psn < 1<<24; psn++ {
		if got := PSNMod(psn, 3); got != psn%3 {
			t.Fatalf("PSNMod(%#x, 3) = %d, want %d", psn, got, psn%3)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for a := 1; a <= 255; a++ {
		top := uint32(1<<24-1) / uint32(a) * uint32(a)
		var psns []uint32
		for k := uint32(0); k < 64 && top >= k*uint32(a); k++ {
			m := top - k*uint32(a)
			psns = append(psns, m, m+uint32(a)-1)
		}
		for range 10000 {
			psns = append(psns, rng.Uint32N(1<<24))
		}
		for _, psn := range psns {
			if psn >= 1<<24 {
				continue
			}
			if got := PSNMod(psn, a); got != psn%uint32(a) {
				t.Fatalf("PSNMod(%#x, %d) = %d, want %d", psn, a, got, psn%uint32(a))
			}
		}
	}
}
