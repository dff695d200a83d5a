package sonic

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// LanesPerCage is the lane count of one front-panel cage (OSFP / QSFP-DD
// 800G): SONiC breaks a cage out into ports of 8, 4, 2 or 1 lanes.
const LanesPerCage = 8

// PortMap names switch ports the SONiC way. A port is named after its first
// lane, counted from 0 across the switch: with 1 lane per port (a 64 x 800G
// switch broken out into 512 x 100G) the ports are Ethernet0, Ethernet1, ...
// Ethernet511; with 8 lanes per port (64 x 800G) Ethernet0, Ethernet8, ...
// Ethernet504; with 2 (256 x 200G) Ethernet0, Ethernet2, ... The PORT
// entry's lanes are the hardware lane numbers, FirstLane onwards, and its
// alias is the cage and breakout position the NVIDIA way (etp1a, etp1b, ...;
// etp1 for a whole cage).
type PortMap struct {
	LanesPerPort int
	FirstLane    int
	Ports        int
	SpeedGbps    int
}

// lanesPerPort is f's sonic.lanes_per_port, or the port speed over the
// target's lane speed.
func lanesPerPort(f *fabric.Fabric, t Target) int {
	if f.SONiC.LanesPerPort > 0 {
		return f.SONiC.LanesPerPort
	}
	speed := t.LaneSpeedGbps
	if speed <= 0 {
		speed = 100
	}
	return max(1, (f.PortSpeedGbps+speed-1)/speed)
}

// NewPortMap is the port map of f's switches on target t.
func NewPortMap(f *fabric.Fabric, t Target) PortMap {
	return PortMap{LanesPerPort: lanesPerPort(f, t), FirstLane: f.SONiC.FirstLane, Ports: f.SwitchPorts, SpeedGbps: f.PortSpeedGbps}
}

// Name is the SONiC name of port i: Ethernet<first lane>.
func (m PortMap) Name(i int) string { return "Ethernet" + strconv.Itoa(i*m.LanesPerPort) }

// Lanes is the PORT entry's lanes: the hardware numbers of port i's lanes.
func (m PortMap) Lanes(i int) string {
	var b strings.Builder
	for l := 0; l < m.LanesPerPort; l++ {
		if l > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(m.FirstLane + i*m.LanesPerPort + l))
	}
	return b.String()
}

// Alias is the front-panel name of port i: etp<cage> and, for a broken-out
// cage, a letter for its position.
func (m PortMap) Alias(i int) string {
	lane := i * m.LanesPerPort
	cage := lane/LanesPerCage + 1
	if m.LanesPerPort >= LanesPerCage {
		return fmt.Sprintf("etp%d", cage)
	}
	return fmt.Sprintf("etp%d%c", cage, 'a'+rune(lane%LanesPerCage/m.LanesPerPort))
}

// Port is the port number of a SONiC port name; ok is false for a name
// this map does not give to any port.
func (m PortMap) Port(name string) (int, bool) {
	n, ok := strings.CutPrefix(name, "Ethernet")
	if !ok || n == "" || (len(n) > 1 && n[0] == '0') {
		return 0, false
	}
	lane, err := strconv.Atoi(n)
	if err != nil || lane < 0 || lane%m.LanesPerPort != 0 || lane/m.LanesPerPort >= m.Ports {
		return 0, false
	}
	return lane / m.LanesPerPort, true
}
