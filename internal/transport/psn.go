package transport

// PSNs are 24-bit serial numbers (InfiniBand BTH): every comparison is a
// signed distance modulo 2^24, valid while the two PSNs are less than 2^23
// apart. A transfer is limited to MaxPackets so that every PSN of it, and
// every PSN an answer may name, stays within that range of its start.

const (
	psnMask = 1<<24 - 1
	psnHalf = 1 << 23
)

// MaxPackets is the largest number of data packets in one write: far below
// 2^23, so that PSN distances within a transfer are never ambiguous.
const MaxPackets = 1 << 22

// PSNAdd returns p + n modulo 2^24; n may be negative.
func PSNAdd(p uint32, n int) uint32 { return uint32(int64(p)+int64(n)) & psnMask }

// PSNDiff returns the signed serial distance a - b, in [-2^23, 2^23).
func PSNDiff(a, b uint32) int {
	d := (a - b) & psnMask
	if d >= psnHalf {
		return int(d) - 1<<24
	}
	return int(d)
}
