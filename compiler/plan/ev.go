package plan

// EV is a 32-bit entropy value: plane | t1 | salt (the profile v1 layout,
// docs/protocol.md section 4; the widths come from the fabric). The EV alone
// decides a packet's path: its plane and the T1 it crosses.
type EV uint32

// EVFields are the parts of an EV.
type EVFields struct {
	Plane, T1, Salt int
}

// MakeEV builds an EV from its fields.
func (p *Plan) MakeEV(f EVFields) EV {
	l := p.F.EV
	return EV(uint32(f.Plane)<<(l.T1Bits+l.SaltBits) | uint32(f.T1)<<l.SaltBits | uint32(f.Salt))
}

// SplitEV returns the fields of an EV.
func (p *Plan) SplitEV(ev EV) EVFields {
	l := p.F.EV
	v := uint32(ev)
	return EVFields{
		Plane: int(v >> (l.T1Bits + l.SaltBits) & (1<<l.PlaneBits - 1)),
		T1:    int(v >> l.SaltBits & (1<<l.T1Bits - 1)),
		Salt:  int(v & (1<<l.SaltBits - 1)),
	}
}

// EVSet is the fabric's base EV set, slot by slot: slots rotate over the
// planes (slot i is in plane i mod P), so every plane holds the same number
// of EVs and any run of P consecutive slots touches every plane once. Within
// a plane the EVs spread evenly over the T1s. The salt of slot i is i, so
// every EV is distinct and an echoed EV names its slot. A NIC adds a per-QP
// T1 offset (modulo the T1 count) to spread different QPs over the T1s.
func (p *Plan) EVSet() []EV {
	f := p.F
	per := f.EVsPerPlane()
	out := make([]EV, f.EV.SetSize)
	for i := range out {
		plane, j := i%f.Planes, i/f.Planes
		t1 := j % f.T1Count
		if per <= f.T1Count {
			t1 = j * f.T1Count / per
		}
		out[i] = p.MakeEV(EVFields{Plane: plane, T1: t1, Salt: i})
	}
	return out
}

// EVBackupSet is the fabric's backup EV set, slot by slot: the EV a slot's
// packets take while its base EV is ASSUMED_BAD. A backup is in the same
// plane as its base EV, so that a failed path moves its load within its
// plane and per-plane load stays equal, and crosses the T1 half the T1s
// further on (modulo the T1 count), so that it avoids the failed base
// path's T1 and its links; the set is balanced over the T1s exactly as the
// base set is. Its salt is set size + slot: an echoed EV names its slot and
// says it was the backup. With one T1 per plane there is no other path in
// the plane and the set is empty: a failed slot is then passed over.
func (p *Plan) EVBackupSet() []EV {
	f := p.F
	if f.T1Count < 2 {
		return nil
	}
	shift := (f.T1Count + 1) / 2
	base := p.EVSet()
	out := make([]EV, len(base))
	for i, ev := range base {
		fl := p.SplitEV(ev)
		fl.T1 = (fl.T1 + shift) % f.T1Count
		fl.Salt = f.EV.SetSize + i
		out[i] = p.MakeEV(fl)
	}
	return out
}

// EVSlot names the slot an echoed EV belongs to and whether it is the
// slot's backup (see EVSet and EVBackupSet); ok is false when the salt
// names no slot.
func (p *Plan) EVSlot(ev EV) (slot int, backup, ok bool) {
	salt, n := p.SplitEV(ev).Salt, p.F.EV.SetSize
	switch {
	case salt < n:
		return salt, false, true
	case salt < 2*n:
		return salt - n, true, true
	}
	return 0, false, false
}
