package sim

import "time"

// Spells are a flap's down and up spells, as the run takes the link down
// and up (mrcgen sim --svg shades the down ones).
func (f Fault) Spells() (down, up time.Duration) { return f.spells() }
