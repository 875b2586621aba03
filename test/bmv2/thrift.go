// Package bmv2 runs BMv2 simple_switch_grpc (p4lang's reference software switch with its
// P4Runtime server) as a second real target for the tests, and reaches what its P4Runtime server
// does not implement through its Thrift runtime.
//
// BMv2's P4Runtime server (PI) answers register reads and writes with UNIMPLEMENTED. The Thrift
// runtime on port 9090 (the one simple_switch_CLI drives) does both; Thrift speaks only a handful
// of calls here, so this package carries its own minimal client instead of generated code: the
// binary protocol (strict), unframed transport, multiplexed under the service name "standard",
// as bm_runtime/standard/Standard.py in the BMv2 build expects.
package bmv2

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Thrift wire constants (Apache Thrift binary protocol).
const (
	thriftVersion1 = 0x80010000
	msgCall        = 1
	msgReply       = 2
	msgException   = 3

	typeStop   = 0
	typeI32    = 8
	typeI64    = 10
	typeString = 11
	typeStruct = 12
)

// Thrift is a connection to BMv2's Thrift runtime. Safe for concurrent use (calls are serialized).
type Thrift struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
	seq  int32
}

// DialThrift connects to BMv2's Thrift runtime at addr (host:9090 by default), retrying for a
// while; dial, when set, opens the connection (e.g. inside a network namespace).
func DialThrift(ctx context.Context, addr string, dial func(ctx context.Context, addr string) (net.Conn, error)) (*Thrift, error) {
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}
	}
	// A switch just started takes a few seconds to open its Thrift port.
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := dial(ctx, addr)
		if err == nil {
			return &Thrift{conn: c, r: bufio.NewReader(c)}, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("bmv2 thrift %s: %w", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Close closes the connection.
func (t *Thrift) Close() error { return t.conn.Close() }

// RegisterRead reads one cell of a register array (context 0, the only one simple_switch has).
func (t *Thrift) RegisterRead(name string, index uint32) (uint64, error) {
	var args argWriter
	args.i32(1, 0)
	args.str(2, name)
	args.i32(3, int32(index))
	var v uint64
	err := t.call("bm_register_read", args.end(), func(id int16, typ byte, r *reader) error {
		if id == 0 && typ == typeI64 {
			v = uint64(r.i64())
			return r.err
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("bmv2 register_read %s[%d]: %w", name, index, err)
	}
	return v, nil
}

// RegisterWrite writes one cell of a register array.
func (t *Thrift) RegisterWrite(name string, index uint32, value uint64) error {
	var args argWriter
	args.i32(1, 0)
	args.str(2, name)
	args.i32(3, int32(index))
	args.i64(4, int64(value))
	if err := t.call("bm_register_write", args.end(), nil); err != nil {
		return fmt.Errorf("bmv2 register_write %s[%d] = %d: %w", name, index, value, err)
	}
	return nil
}

// call sends one CALL and reads its REPLY; onField sees every field of the result struct other
// than the exception (field 1, a struct with the error code in its field 1).
func (t *Thrift) call(method string, args []byte, onField func(id int16, typ byte, r *reader) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	name := "standard:" + method
	msg := make([]byte, 0, 16+len(name)+len(args))
	msg = binary.BigEndian.AppendUint32(msg, thriftVersion1|msgCall)
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(name)))
	msg = append(msg, name...)
	msg = binary.BigEndian.AppendUint32(msg, uint32(t.seq))
	msg = append(msg, args...)
	t.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := t.conn.Write(msg); err != nil {
		return err
	}

	r := &reader{r: t.r}
	head := r.u32()
	if r.err == nil && head&0xffff0000 != thriftVersion1 {
		return fmt.Errorf("reply is not Thrift binary protocol (header %#x)", head)
	}
	_ = r.bytes() // method name
	if seq := int32(r.u32()); r.err == nil && seq != t.seq {
		return fmt.Errorf("reply sequence %d, want %d", seq, t.seq)
	}
	switch head & 0xff {
	case msgReply:
	case msgException: // TApplicationException {1: message, 2: type}
		var text string
		r.fields(func(id int16, typ byte) {
			if id == 1 && typ == typeString {
				text = string(r.bytes())
			} else {
				r.skip(typ)
			}
		})
		if r.err != nil {
			return r.err
		}
		return fmt.Errorf("application exception: %s", text)
	default:
		return fmt.Errorf("unexpected Thrift message type %d", head&0xff)
	}
	var ouch error
	var cbErr error
	r.fields(func(id int16, typ byte) {
		switch {
		case id == 1 && typ == typeStruct: // InvalidRegisterOperation {1: code}
			code := int32(-1)
			r.fields(func(id int16, typ byte) {
				if id == 1 && typ == typeI32 {
					code = int32(r.u32())
				} else {
					r.skip(typ)
				}
			})
			ouch = fmt.Errorf("invalid register operation (code %d: %s)", code, registerErrorCodes[code])
		case onField != nil:
			before := r.n
			if err := onField(id, typ, r); err != nil && cbErr == nil {
				cbErr = err
			}
			if r.n == before {
				r.skip(typ)
			}
		default:
			r.skip(typ)
		}
	})
	if r.err != nil {
		return r.err
	}
	if ouch != nil {
		return ouch
	}
	return cbErr
}

// registerErrorCodes is BMv2's RegisterOperationErrorCode.
var registerErrorCodes = map[int32]string{1: "INVALID_HANDLE", 2: "INVALID_INDEX", 3: "ERROR"}

type argWriter struct{ b []byte }

func (w *argWriter) field(typ byte, id int16) {
	w.b = append(w.b, typ)
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(id))
}
func (w *argWriter) i32(id int16, v int32) {
	w.field(typeI32, id)
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(v))
}
func (w *argWriter) i64(id int16, v int64) {
	w.field(typeI64, id)
	w.b = binary.BigEndian.AppendUint64(w.b, uint64(v))
}
func (w *argWriter) str(id int16, s string) {
	w.field(typeString, id)
	w.b = binary.BigEndian.AppendUint32(w.b, uint32(len(s)))
	w.b = append(w.b, s...)
}
func (w *argWriter) end() []byte { return append(w.b, typeStop) }

// reader decodes the binary protocol; the first error sticks.
type reader struct {
	r   io.Reader
	err error
	n   int // bytes consumed
}

func (r *reader) read(n int) []byte {
	if r.err != nil {
		return make([]byte, n)
	}
	b := make([]byte, n)
	_, r.err = io.ReadFull(r.r, b)
	r.n += n
	return b
}
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.read(4)) }
func (r *reader) i64() int64  { return int64(binary.BigEndian.Uint64(r.read(8))) }
func (r *reader) bytes() []byte {
	n := r.u32()
	if n > 1<<20 {
		if r.err == nil {
			r.err = errors.New("thrift string longer than 1 MiB")
		}
		return nil
	}
	return r.read(int(n))
}

// fields calls fn for each field header of a struct until STOP; fn must consume the value.
func (r *reader) fields(fn func(id int16, typ byte)) {
	for r.err == nil {
		typ := r.read(1)[0]
		if typ == typeStop {
			return
		}
		id := int16(binary.BigEndian.Uint16(r.read(2)))
		if r.err != nil {
			return
		}
		fn(id, typ)
	}
}

// skip consumes a value of a type this client does not read.
func (r *reader) skip(typ byte) {
	switch typ {
	case 2, 3: // bool, byte
		r.read(1)
	case 6: // i16
		r.read(2)
	case typeI32:
		r.read(4)
	case 4, typeI64: // double, i64
		r.read(8)
	case typeString:
		r.bytes()
	case typeStruct:
		r.fields(func(_ int16, typ byte) { r.skip(typ) })
	case 13: // map
		h := r.read(6)
		n := int(binary.BigEndian.Uint32(h[2:]))
		for i := 0; i < n && r.err == nil; i++ {
			r.skip(h[0])
			r.skip(h[1])
		}
	case 14, 15: // set, list
		h := r.read(5)
		n := int(binary.BigEndian.Uint32(h[1:]))
		for i := 0; i < n && r.err == nil; i++ {
			r.skip(h[0])
		}
	default:
		if r.err == nil {
			r.err = fmt.Errorf("unknown Thrift type %d", typ)
		}
	}
}
