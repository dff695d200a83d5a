package verify

// SweepOptions choose the what-ifs of a sweep.
type SweepOptions struct {
	// Sample, when positive, takes that many links (or pairs of links with
	// Double) at random instead of every link.
	Sample int
	// Seed seeds the sample.
	Seed uint64
	// Double takes two links down at once (needs Sample).
	Double bool
	// Progress, if set, is called now and then with the what-ifs done.
	Progress func(done, total int)
}

// SweepClass sums up the what-ifs of one class of links ("t0-t1", "host",
// or for double failures "t0-t1+host" and so on).
type SweepClass struct {
	Class   string `json:"class"`
	WhatIfs int    `json:"what_ifs"`
	// Per what-if.
	LostPaths     Stat `json:"lost_paths"`
	Hosts         Stat `json:"hosts_affected"`
	HostPairs     Stat `json:"host_pairs_affected"`
	MaxPairPaths  Stat `json:"max_paths_lost_per_pair"`
	EVSlots       Stat `json:"base_ev_slots_lost"`
	MaxHostShare  Stat `json:"max_host_share_lost"`
	MaxPlaneShare Stat `json:"max_host_plane_share_lost"`
	// Shares is the distribution of the share of its paths each affected
	// host loses, over every what-if of the class.
	Shares []ShareBucket `json:"shares"`
}

// ShareBucket counts (what-if, affected host) pairs whose share of the
// host's paths lost is in (Lo, Hi].
type ShareBucket struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Hosts uint64  `json:"hosts"`
	// Share is the exact share when every host of the bucket lost the same
	// (else 0).
	Share float64 `json:"share,omitempty"`
	share float64
	mixed bool
}

// SweepReport is the outcome of a sweep.
type SweepReport struct {
	Links   int          `json:"links"`
	WhatIfs int          `json:"what_ifs"`
	Double  bool         `json:"double"`
	Sampled bool         `json:"sampled"`
	Seed    uint64       `json:"seed,omitempty"`
	Classes []SweepClass `json:"classes"`
	// HostPaths and PlanePaths are the paths of one host, in all and per
	// plane.
	HostPaths  uint64 `json:"host_paths"`
	PlanePaths uint64 `json:"plane_paths"`
	// CoreSeconds is the CPU time the what-ifs took, summed over workers.
	CoreSeconds float64 `json:"core_seconds"`
}
