package verify

// sweepScratch is one worker's reusable state.
type sweepScratch struct {
	boxes   [][]*box  // per touched (plane, group) slot
	slotOf  [][]int32 // per plane and group: its slot + 1, or 0
	cnt     [][]int32 // per plane and group: boxes reaching it
	touched []int64
	shorts  [][]shortLoss
	extras  map[int][]*box // host -> its own boxes (its NIC link is down)
	xshort  map[int][]shortLoss
}

type shortLoss struct {
	plane int
	k     bitset
}

func newScratch() *sweepScratch {
	return &sweepScratch{extras: map[int][]*box{}, xshort: map[int][]shortLoss{}}
}

// counts is plane's per-group counter (all zero between what-ifs).
func (sc *sweepScratch) counts(s *Sweeper, plane int) []int32 {
	if sc.cnt == nil {
		sc.cnt = make([][]int32, len(s.planes))
	}
	if sc.cnt[plane] == nil {
		sc.cnt[plane] = make([]int32, len(s.planes[plane].groups))
	}
	return sc.cnt[plane]
}

func (sc *sweepScratch) reset() {
	for i, k := range sc.touched {
		sc.boxes[i] = sc.boxes[i][:0]
		sc.shorts[i] = sc.shorts[i][:0]
		sc.slotOf[k>>32][int32(k)] = 0
	}
	sc.touched = sc.touched[:0]
	clear(sc.extras)
	clear(sc.xshort)
}

// slot is the index of (plane, group)'s losses, or -1.
func (sc *sweepScratch) slot(plane int, g int32) int {
	if sc.slotOf == nil || sc.slotOf[plane] == nil {
		return -1
	}
	return int(sc.slotOf[plane][g]) - 1
}

// at is the index of (plane, group)'s losses, made when new.
func (sc *sweepScratch) at(s *Sweeper, plane int, g int32) int {
	if sc.slotOf == nil {
		sc.slotOf = make([][]int32, len(s.planes))
	}
	if sc.slotOf[plane] == nil {
		sc.slotOf[plane] = make([]int32, len(s.planes[plane].groups))
	}
	if i := sc.slotOf[plane][g]; i > 0 {
		return int(i) - 1
	}
	i := len(sc.touched)
	sc.slotOf[plane][g] = int32(i + 1)
	sc.touched = append(sc.touched, int64(plane)<<32|int64(g))
	if i == len(sc.boxes) {
		sc.boxes = append(sc.boxes, nil)
		sc.shorts = append(sc.shorts, nil)
	}
	return i
}
