package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Defaults for the zero values of Config.
const (
	// DefaultMaxSendMsgSize is gRPC's default maximum message size; Write
	// batches stay under it.
	DefaultMaxSendMsgSize = 4 << 20
	// DefaultMaxRecvMsgSize bounds one Read response. PI answers a wildcard
	// read with a single message holding every entry, which for a large
	// table is far above gRPC's 4 MiB default.
	DefaultMaxRecvMsgSize = 256 << 20
	// DefaultMaxPipelineMsgSize bounds a SetForwardingPipelineConfig request
	// (the BMv2 JSON can be several MiB); PI accepts up to 256 MiB.
	DefaultMaxPipelineMsgSize = 256 << 20
	// DefaultMaxHeaderListSize is the HTTP/2 header list size the client
	// accepts. The per-update errors of a failed Write travel in the
	// grpc-status-details-bin trailer; for large batches they exceed the
	// 8 KiB that some gRPC stacks accept by default and would be lost.
	DefaultMaxHeaderListSize = 16 << 20
	// DefaultMaxBatchUpdates is the most updates put in one WriteRequest.
	// BMv2 reaches its ceiling (~200k entries/s) with batches of 1000 or more.
	DefaultMaxBatchUpdates = 1000
	// DefaultBackoffInitial and DefaultBackoffMax bound the delay between
	// StreamChannel reconnection attempts.
	DefaultBackoffInitial = 100 * time.Millisecond
	// DefaultWriteWindow keeps two Write RPCs in flight: measured on BMv2,
	// it hides the client's marshalling behind the device's work.
	DefaultWriteWindow = 2
	DefaultBackoffMax  = 5 * time.Second
)

// Roles and election id ranges of mrcgen's controllers.
//
// The static tables and the pipeline are written by push in the default
// role (RoleStatic, "": full pipeline access, which some servers require
// for SetForwardingPipelineConfig). Tables written at run time (qp_send, qp_recv
// and ev_state on the NICs) are written in RoleRuntime. On a server that
// arbitrates per (device_id, role), as the P4Runtime specification says,
// each has its own primary: neither can demote the other.
//
// PI (the P4Runtime server of simple_switch_grpc, p4lang/PI at f96af95)
// ignores roles: proto/server/pi_server.cpp keeps one set of connections
// per device ordered by election id alone (DeviceState, lines 160-167 and
// 363; add_connection, lines 224-240), StreamChannel reads only device_id
// and election_id of an arbitration (lines 498-528), and Write and
// SetForwardingPipelineConfig accept a request only if its election id is
// that of the device's primary (lines 418-423, 453-458); no PI source reads
// a role (git grep -i role finds nothing outside the p4runtime submodule),
// so role_config and per-role arbitration do not exist there. There every controller of a device competes in one
// arbitration, so the two ranges are kept apart: a runtime writer's
// election id has high word RuntimeElectionIDHigh, above every push
// election id (high word 0). On PI a runtime writer is therefore never
// demoted by a push; a push to a device whose runtime writer is connected
// is a backup and is refused (ErrNotPrimary), and a runtime writer that
// connects during a push makes the push's remaining writes fail.
const (
	RoleStatic  = ""
	RoleRuntime = "mrcgen-runtime"
	// RuntimeElectionIDHigh is the high word of runtime writers' election
	// ids; push election ids have high word 0.
	RuntimeElectionIDHigh = 1
)

// RuntimeElectionID returns the election id of a runtime writer: low in
// RuntimeElectionIDHigh's range.
func RuntimeElectionID(low uint64) ElectionID {
	return ElectionID{High: RuntimeElectionIDHigh, Low: low}
}

// InRuntimeRange reports whether e is in the runtime writers' range.
func (e ElectionID) InRuntimeRange() bool { return e.High >= RuntimeElectionIDHigh }

// ErrInvalidConfig is wrapped by the errors New returns for a bad Config.
var ErrInvalidConfig = errors.New("invalid P4Runtime client config")

// ElectionID is a P4Runtime election id, an unsigned 128-bit number. The
// highest election id among the live controllers of a (device_id, role) is
// the primary.
type ElectionID struct {
	High, Low uint64
}

// IsZero reports whether e is 0, which P4Runtime treats as "unset".
func (e ElectionID) IsZero() bool { return e.High == 0 && e.Low == 0 }

// Compare returns -1, 0 or +1 as e is less than, equal to or greater than o.
func (e ElectionID) Compare(o ElectionID) int {
	switch {
	case e.High < o.High, e.High == o.High && e.Low < o.Low:
		return -1
	case e == o:
		return 0
	default:
		return 1
	}
}

// String renders e in decimal.
func (e ElectionID) String() string {
	if e.High == 0 {
		return fmt.Sprintf("%d", e.Low)
	}
	v := new(big.Int).SetUint64(e.High)
	v.Lsh(v, 64)
	v.Or(v, new(big.Int).SetUint64(e.Low))
	return v.String()
}

// Proto returns e as a p4.v1.Uint128.
func (e ElectionID) Proto() *p4v1.Uint128 { return &p4v1.Uint128{High: e.High, Low: e.Low} }

// ElectionIDFromProto converts a p4.v1.Uint128 (nil is zero).
func ElectionIDFromProto(u *p4v1.Uint128) ElectionID {
	return ElectionID{High: u.GetHigh(), Low: u.GetLow()}
}

// Transport selects how the connection is secured. The zero value is TLS
// with the system's root CAs. Plaintext needs Insecure set explicitly.
type Transport struct {
	// Insecure selects a plaintext connection (no TLS). Client.Warnings
	// then reports it; the caller should warn loudly.
	Insecure bool
	// CAFile is a PEM file of CAs to verify the server with; empty uses
	// the system's roots.
	CAFile string
	// CertFile and KeyFile are the client's certificate and key (PEM) for
	// mutual TLS; both or neither.
	CertFile, KeyFile string
	// ServerName overrides the name checked against the server's
	// certificate (default: the host part of the address).
	ServerName string
}

func (t Transport) credentials() (credentials.TransportCredentials, []string, error) {
	if t.Insecure {
		if t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" {
			return nil, nil, fmt.Errorf("%w: Insecure excludes CAFile, CertFile and KeyFile", ErrInvalidConfig)
		}
		return insecure.NewCredentials(), []string{"plaintext P4Runtime connection (Insecure): anyone on the path can read and rewrite the switch's tables"}, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: CA file: %w", ErrInvalidConfig, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("%w: CA file %s: no PEM certificate found", ErrInvalidConfig, t.CAFile)
		}
		cfg.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: client certificate: %w", ErrInvalidConfig, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case t.CertFile != "" || t.KeyFile != "":
		return nil, nil, fmt.Errorf("%w: CertFile and KeyFile go together (mutual TLS)", ErrInvalidConfig)
	}
	return credentials.NewTLS(cfg), nil, nil
}

// Backoff bounds the delay between reconnection attempts of the stream
// supervisor: Initial, doubled after each failure up to Max, reset after a
// successful arbitration.
type Backoff struct {
	Initial, Max time.Duration
}

// Config describes the connection to one device. DeviceID, Address and
// ElectionID are required; zero values of the rest mean the defaults above.
type Config struct {
	// Name identifies the device in errors and logs (default: Address).
	Name string
	// Address is a gRPC target, e.g. "127.0.0.1:9559".
	Address  string
	DeviceID uint64
	// Role is the P4Runtime role name; "" is the default role (full
	// pipeline access), sent as an unset role.
	Role       string
	ElectionID ElectionID
	Transport  Transport
	// ReadOnly makes a reader: it never opens the StreamChannel, so it
	// takes no part in arbitration and disturbs no controller, and it
	// refuses to write. ElectionID may then be zero. (P4Runtime serves a
	// Read to any client.)
	ReadOnly bool

	MaxSendMsgSize     int
	MaxRecvMsgSize     int
	MaxPipelineMsgSize int
	MaxHeaderListSize  uint32
	MaxBatchUpdates    int
	Backoff            Backoff
	// WriteWindow is how many Write RPCs of one Write call may be in flight
	// at once (default DefaultWriteWindow; 1 sends them one after another).
	WriteWindow int

	// Logger receives debug and info messages; nil discards them.
	Logger *slog.Logger
	// DialOptions are appended to the client's own (e.g. a context dialer
	// for an in-process server in tests).
	DialOptions []grpc.DialOption
}

func (c *Config) setDefaults() error {
	if c.DeviceID == 0 {
		return fmt.Errorf("%w: device_id 0 is not allowed by P4Runtime (start simple_switch_grpc with --device-id >= 1)", ErrInvalidConfig)
	}
	if c.Address == "" {
		return fmt.Errorf("%w: empty address", ErrInvalidConfig)
	}
	if c.ElectionID.IsZero() && !c.ReadOnly {
		return fmt.Errorf("%w: election_id 0 means \"unset\" in P4Runtime and can never be primary", ErrInvalidConfig)
	}
	if c.Name == "" {
		c.Name = c.Address
	}
	if c.MaxSendMsgSize <= 0 {
		c.MaxSendMsgSize = DefaultMaxSendMsgSize
	}
	if c.MaxRecvMsgSize <= 0 {
		c.MaxRecvMsgSize = DefaultMaxRecvMsgSize
	}
	if c.MaxPipelineMsgSize <= 0 {
		c.MaxPipelineMsgSize = DefaultMaxPipelineMsgSize
	}
	if c.MaxHeaderListSize == 0 {
		c.MaxHeaderListSize = DefaultMaxHeaderListSize
	}
	if c.MaxBatchUpdates <= 0 {
		c.MaxBatchUpdates = DefaultMaxBatchUpdates
	}
	if c.WriteWindow <= 0 {
		c.WriteWindow = DefaultWriteWindow
	}
	if c.Backoff.Initial <= 0 {
		c.Backoff.Initial = DefaultBackoffInitial
	}
	if c.Backoff.Max < c.Backoff.Initial {
		c.Backoff.Max = max(DefaultBackoffMax, c.Backoff.Initial)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
