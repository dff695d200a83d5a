package bmv2

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listenInodes returns the socket inodes listening on TCP port.
func listenInodes(port int) map[string]bool {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if !ok {
				continue
			}
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
				inodes[fields[9]] = true
			}
		}
		f.Close()
	}
	return inodes
}

// ownsListener reports whether process pid is the only one listening on
// TCP port: freePorts releases the ports it found before the switch binds
// them, so another process may have taken one in between, and a switch
// that answers on "its" address may not be ours. gRPC's C++ server binds
// with SO_REUSEPORT, so two switches given one port both listen on it and
// the kernel shares the connections between them: every listener on the
// port must be pid's.
func ownsListener(pid, port int) (bool, error) {
	inodes := listenInodes(port)
	if len(inodes) == 0 {
		return false, nil
	}
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return false, fmt.Errorf("list sockets of pid %d: %w", pid, err)
	}
	own := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err != nil {
			continue
		}
		if ino := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"); strings.HasPrefix(link, "socket:[") && inodes[ino] {
			own[ino] = true
		}
	}
	return len(own) == len(inodes), nil
}
