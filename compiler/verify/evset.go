package verify

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/plan"
)

// SlotEV is one entry of an EV set table: the EV a slot holds.
type SlotEV struct {
	Slot int
	EV   plan.EV
}

// EVSetSpec names an EV set table and what its slots must hold. The base
// set is one; a backup set (the EVs a failed one is replaced from) is
// checked by the same rules with its own spec.
type EVSetSpec struct {
	// Device and File say where the entries are (for messages).
	Device, File string
	// Table is the table's full name.
	Table string
	// Size is the number of slots: 0..Size-1, each exactly once.
	Size int
	// FirstSalt is the salt of slot 0; slot i holds salt FirstSalt+i, so an
	// echoed EV names its slot (0 for the base set).
	FirstSalt int
	// BackupOf, for a backup set, is the base set slot by slot: slot i's
	// EV must be in the plane of BackupOf[i] (a failed path's load stays in
	// its plane) and cross another T1 (it must avoid the failed path). Nil
	// for a base set.
	BackupOf []plan.EV
}

// CheckEVSet checks an EV set: every slot present once, every EV's plane
// and T1 in range and its salt naming its slot, the same number of EVs in
// every plane, and within a plane the EVs spread evenly over the T1s (each
// T1 holds n/T1s rounded down or up). For a backup set it also checks each
// slot against its base EV (spec.BackupOf). It returns what is wrong, by slot or
// plane; nil when the set is sound.
func CheckEVSet(p *plan.Plan, spec EVSetSpec, evs []SlotEV) []Failure {
	f := p.F
	var out []Failure
	fail := func(key, format string, args ...any) {
		out = append(out, Failure{Device: spec.Device, File: spec.File, Table: spec.Table, Key: key,
			Problem: fmt.Sprintf("table %s %s: ", spec.Table, key) + fmt.Sprintf(format, args...)})
	}
	count := make([]int, spec.Size)
	var outside, badPlane, badT1, badSalt, otherPlane, sameT1 []int
	var firstPlane, firstT1, firstSalt, firstOther, firstSame string
	perPlane := make([]int, f.Planes)
	perT1 := make([][]int, f.Planes)
	for i := range perT1 {
		perT1[i] = make([]int, f.T1Count)
	}
	for _, e := range evs {
		if e.Slot < 0 || e.Slot >= spec.Size {
			outside = append(outside, e.Slot)
			continue
		}
		count[e.Slot]++
		if count[e.Slot] > 1 {
			continue // counted once; reported below
		}
		fl := p.SplitEV(e.EV)
		ok := true
		if fl.Plane >= f.Planes {
			if badPlane == nil {
				firstPlane = fmt.Sprintf("slot %d holds EV %#08x, plane %d", e.Slot, uint32(e.EV), fl.Plane)
			}
			badPlane, ok = append(badPlane, e.Slot), false
		}
		if fl.T1 >= f.T1Count {
			if badT1 == nil {
				firstT1 = fmt.Sprintf("slot %d holds EV %#08x, T1 %d", e.Slot, uint32(e.EV), fl.T1)
			}
			badT1, ok = append(badT1, e.Slot), false
		}
		if fl.Salt != spec.FirstSalt+e.Slot {
			if badSalt == nil {
				firstSalt = fmt.Sprintf("slot %d holds EV %#08x, salt %d", e.Slot, uint32(e.EV), fl.Salt)
			}
			badSalt = append(badSalt, e.Slot)
		}
		if ok && spec.BackupOf != nil && e.Slot < len(spec.BackupOf) {
			b := p.SplitEV(spec.BackupOf[e.Slot])
			switch {
			case fl.Plane != b.Plane:
				if otherPlane == nil {
					firstOther = fmt.Sprintf("slot %d holds EV %#08x in plane %d, its base EV %#08x is in plane %d", e.Slot, uint32(e.EV), fl.Plane, uint32(spec.BackupOf[e.Slot]), b.Plane)
				}
				otherPlane = append(otherPlane, e.Slot)
			case fl.T1 == b.T1:
				if sameT1 == nil {
					firstSame = fmt.Sprintf("slot %d holds EV %#08x on T1 %d, as its base EV %#08x", e.Slot, uint32(e.EV), fl.T1, uint32(spec.BackupOf[e.Slot]))
				}
				sameT1 = append(sameT1, e.Slot)
			}
		}
		if ok {
			perPlane[fl.Plane]++
			perT1[fl.Plane][fl.T1]++
		}
	}
	var missing, twice []int
	for slot, n := range count {
		switch {
		case n == 0:
			missing = append(missing, slot)
		case n > 1:
			twice = append(twice, slot)
		}
	}
	if len(missing) > 0 {
		fail(slotsKey(missing), "no entry (the set has %d slots, 0-%d; %d of them are missing)", spec.Size, spec.Size-1, len(missing))
	}
	if len(twice) > 0 {
		fail(slotsKey(twice), "more than one entry")
	}
	if len(outside) > 0 {
		sort.Ints(outside)
		fail(slotsKey(outside), "outside the set (slots 0-%d)", spec.Size-1)
	}
	if len(badPlane) > 0 {
		fail(slotsKey(badPlane), "plane out of range (%s; the fabric has %d planes)", firstPlane, f.Planes)
	}
	if len(badT1) > 0 {
		fail(slotsKey(badT1), "T1 out of range (%s; a plane has %d T1s)", firstT1, f.T1Count)
	}
	if len(badSalt) > 0 {
		fail(slotsKey(badSalt), "salt is not the slot (%s, want %d): an echoed EV must name its slot", firstSalt, spec.FirstSalt+badSalt[0])
	}
	if len(otherPlane) > 0 {
		fail(slotsKey(otherPlane), "backup in another plane than its base EV (%s): a failed path's load must stay in its plane", firstOther)
	}
	if len(sameT1) > 0 {
		fail(slotsKey(sameT1), "backup crosses the same T1 as its base EV (%s): it would fail with it", firstSame)
	}
	if len(out) > 0 {
		// The counts below would only repeat what is missing or wrong.
		return out
	}
	want := spec.Size / f.Planes
	var unequal []string
	for pl, n := range perPlane {
		if n != want {
			unequal = append(unequal, fmt.Sprintf("plane %d holds %d", pl, n))
		}
	}
	if len(unequal) > 0 {
		fail("planes", "unbalanced: %s; every plane must hold %d (%d slots over %d planes)", strings.Join(unequal, ", "), want, spec.Size, f.Planes)
		return out
	}
	for pl, counts := range perT1 {
		lo, hi := want/f.T1Count, (want+f.T1Count-1)/f.T1Count
		var off []string
		for t1, n := range counts {
			if n < lo || n > hi {
				off = append(off, fmt.Sprintf("T1 %d holds %d", t1, n))
			}
		}
		if len(off) > 0 {
			each := strconv.Itoa(lo)
			if hi != lo {
				each = fmt.Sprintf("%d or %d", lo, hi)
			}
			if len(off) > 4 {
				off = append(off[:4], fmt.Sprintf("%d more", len(off)-4))
			}
			fail(fmt.Sprintf("plane %d", pl), "T1s unbalanced: %s; each T1 must hold %s (%d EVs over %d T1s)", strings.Join(off, ", "), each, want, f.T1Count)
		}
	}
	return out
}

// slotsKey lists slots compactly: "slot 3", "slots 0-15", "slots 1,4-6".
func slotsKey(slots []int) string {
	var parts []string
	for i := 0; i < len(slots); {
		j := i
		for j+1 < len(slots) && slots[j+1] == slots[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(slots[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", slots[i], slots[j]))
		}
		i = j + 1
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("... (%d slots)", len(slots)))
	}
	if len(slots) == 1 {
		return "slot " + parts[0]
	}
	return "slots " + strings.Join(parts, ",")
}
