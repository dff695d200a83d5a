package fabric

import (
	"fmt"
	"sort"
)

// DefaultPreset is the preset used when no fabric file or preset is named.
const DefaultPreset = "tiny"

// profileDefaults holds the profile v1 values (docs/protocol.md, section 9)
// that do not depend on the fabric's size.
func profileDefaults() Description {
	return Description{
		Links:    LinkSpec{NICT0Ns: DefaultNICT0Ns, T0T1Ns: DefaultT0T1Ns},
		USID:     USIDSpec{Block: "fcbb:bb00::/32", PlaneBits: 4, KindBits: 2, IndexBits: 10},
		EV:       EVSpec{PlaneBits: 4, T1Bits: 10, SaltBits: 18},
		DSCP:     DSCPSpec{Control: 46, Trimmable: 4, Trimmed: 12, TrimmedLastHop: 13, NoTrim: 5},
		Trim:     TrimSpec{SizeBytes: MinTrimBytes, ThresholdPackets: 16, ECNPackets: 14, QueuePackets: DefaultQueuePackets},
		Hosts:    HostSpec{Prefix: "fd00:6d72:6300::/64"},
		Failover: FailoverSpec{ProbePasses: DefaultProbePasses}, // K derived
	}
}

// presets returns a fresh copy of every built-in fabric, by name.
func presets() map[string]Description {
	tiny := profileDefaults()
	tiny.Name = "tiny"
	tiny.Planes = 2
	tiny.NIC = NICSpec{SpeedGbps: 200, AckEvery: DefaultAckEvery}
	tiny.Switch = SwitchSpec{Ports: 8, PortSpeedGbps: 100}
	tiny.T0 = T0Spec{Count: 2, DownPorts: 2, UpPorts: 2}
	tiny.T1 = T1Spec{Count: 2}
	tiny.EV.SetSize = 16

	small := profileDefaults()
	small.Name = "small"
	small.Planes = 4
	small.NIC = NICSpec{SpeedGbps: 800, AckEvery: DefaultAckEvery}
	small.Switch = SwitchSpec{Ports: 16, PortSpeedGbps: 200}
	small.T0 = T0Spec{Count: 8, DownPorts: 4, UpPorts: 4}
	small.T1 = T1Spec{Count: 4}
	small.EV.SetSize = 128

	// The simulator's 1,024-host fabric: the paper's 8 planes of 800G NICs
	// on 64-port switches (6.4T, 64 x 100G), 32 T0 and 32 T1 per plane.
	k1 := profileDefaults()
	k1.Name = "mrc-1k"
	k1.Planes = 8
	k1.NIC = NICSpec{SpeedGbps: 800, AckEvery: DefaultAckEvery}
	k1.Switch = SwitchSpec{Ports: 64, PortSpeedGbps: 100}
	k1.T0 = T0Spec{Count: 32, DownPorts: 32, UpPorts: 32}
	k1.T1 = T1Spec{Count: 32}
	k1.EV.SetSize = 256

	// The fabric of the MRC paper: 51.2T switches (512 x 100G), 8 planes,
	// 512 T0 and 256 T1 per plane, 131,072 hosts.
	big := profileDefaults()
	big.Name = "mrc-131k"
	big.Planes = 8
	big.NIC = NICSpec{SpeedGbps: 800, AckEvery: DefaultAckEvery}
	big.Switch = SwitchSpec{Ports: 512, PortSpeedGbps: 100}
	big.T0 = T0Spec{Count: 512, DownPorts: 256, UpPorts: 256}
	big.T1 = T1Spec{Count: 256}
	big.EV.SetSize = 256

	return map[string]Description{tiny.Name: tiny, small.Name: small, k1.Name: k1, big.Name: big}
}

// PresetNames lists the built-in fabrics in a stable order.
func PresetNames() []string {
	all := presets()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Preset returns the description of a built-in fabric.
func Preset(name string) (Description, error) {
	d, ok := presets()[name]
	if !ok {
		return Description{}, fmt.Errorf("unknown preset %q (known: %v)", name, PresetNames())
	}
	return d, nil
}

// Default returns the description every fabric file starts from: the tiny
// preset. A file overrides only the fields it names.
func Default() Description {
	d, _ := Preset(DefaultPreset)
	return d
}
