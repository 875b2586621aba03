// Command vectors runs the packet vectors (test/vectors/cases) against a P4Runtime target whose
// ports are network interfaces: the software UPF, BMv2 simple_switch_grpc or a Tofino model.
//
//	vectors --target 127.0.0.1:9559 --port n3=1@veth1 --port n6=2@veth3 --port wifi=3@veth5 \
//	    --cpu-port 255 --device-config build/p4/v1model/junction_upf.json --thrift 127.0.0.1:9090
//
// Each --port names a logical port of the vectors, the target's port number for it, and the
// interface on the test side of the link to that port (the runner sends and captures there).
// Registers go through P4Runtime, or through BMv2's Thrift runtime with --thrift (BMv2's
// P4Runtime server implements neither register reads nor writes). The exit status is 0 when every vector passed, 1 when one failed, 2 on a usage or setup error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/junction-atsss/junction/p4"
	"github.com/junction-atsss/junction/test/bmv2"
	"github.com/junction-atsss/junction/test/vectors"
)

type portFlags []vectors.Port

func (p *portFlags) String() string { return fmt.Sprint(*p) }

// Set parses NAME=NUMBER@IFACE.
func (p *portFlags) Set(s string) error {
	name, rest, ok := strings.Cut(s, "=")
	num, iface, ok2 := strings.Cut(rest, "@")
	if !ok || !ok2 || name == "" || iface == "" {
		return fmt.Errorf("want NAME=NUMBER@IFACE (e.g. n3=1@veth1), got %q", s)
	}
	n, err := strconv.ParseUint(num, 0, 32)
	if err != nil {
		return fmt.Errorf("port %s: bad number %q", name, num)
	}
	*p = append(*p, vectors.Port{Name: name, Number: uint32(n), Iface: iface})
	return nil
}

func parseElectionID(s string) ([2]uint64, error) {
	hi, lo, found := strings.Cut(s, ",")
	if !found {
		hi, lo = "0", s
	}
	h, err1 := strconv.ParseUint(strings.TrimSpace(hi), 0, 64)
	l, err2 := strconv.ParseUint(strings.TrimSpace(lo), 0, 64)
	if err := errors.Join(err1, err2); err != nil || (h == 0 && l == 0) {
		return [2]uint64{}, fmt.Errorf("--election-id: want LOW or HIGH,LOW, not zero; got %q", s)
	}
	return [2]uint64{h, l}, nil
}

func main() {
	os.Exit(run())
}

func run() int {
	var (
		ports        portFlags
		target       = flag.String("target", "127.0.0.1:9559", "P4Runtime gRPC address of the target")
		deviceID     = flag.Uint64("device-id", 1, "P4Runtime device ID")
		p4infoPath   = flag.String("p4info", "", "P4Info file (text, JSON or binary); default: the P4Info embedded in this binary")
		deviceConfig = flag.String("device-config", "", "file pushed as p4_device_config (BMv2 JSON, Tofino binary); empty for the software UPF")
		skipPipeline = flag.Bool("skip-pipeline", false, "do not push the pipeline (the target already runs it)")
		cpuPort      = flag.Uint("cpu-port", 0, "the target's CPU port (used as the clone-session port of the redundant mode)")
		electionID   = flag.String("election-id", "0,1", "election ID, LOW or HIGH,LOW")
		dir          = flag.String("vectors", "test/vectors/cases", "directory of vector files")
		runRE        = flag.String("run", "", "run only the cases whose name matches this regular expression")
		window       = flag.Duration("window", vectors.DefaultWindow, "how long a step waits for output")
		thrift       = flag.String("thrift", "", "BMv2 Thrift runtime address (host:9090): read and write registers there, not over P4Runtime")
	)
	flag.Var(&ports, "port", "NAME=NUMBER@IFACE, repeatable: a logical port, the target's port number, the test-side interface")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "vectors: unexpected arguments %q\n", flag.Args())
		return 2
	}
	if len(ports) == 0 {
		fmt.Fprintln(os.Stderr, "vectors: give at least one --port NAME=NUMBER@IFACE")
		return 2
	}
	election, err := parseElectionID(*electionID)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vectors:", err)
		return 2
	}
	var re *regexp.Regexp
	if *runRE != "" {
		if re, err = regexp.Compile(*runRE); err != nil {
			fmt.Fprintln(os.Stderr, "vectors: --run:", err)
			return 2
		}
	}
	var info *p4configv1.P4Info
	if *p4infoPath != "" {
		info, err = vectors.LoadP4Info(*p4infoPath)
	} else {
		info, err = p4.P4Info()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vectors:", err)
		return 2
	}
	var config []byte
	if *deviceConfig != "" {
		if config, err = os.ReadFile(*deviceConfig); err != nil {
			fmt.Fprintln(os.Stderr, "vectors:", err)
			return 2
		}
	}
	cases, err := vectors.LoadCases(*dir, re)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vectors:", err)
		return 2
	}
	if len(cases) == 0 {
		fmt.Fprintf(os.Stderr, "vectors: no case in %s matches %q\n", *dir, *runRE)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	var registers vectors.RegisterAccess
	if *thrift != "" {
		t, err := bmv2.DialThrift(ctx, *thrift, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vectors:", err)
			return 2
		}
		defer t.Close()
		registers = t
	}
	_, failed, err := vectors.Run(ctx, vectors.Config{
		Target:       *target,
		DeviceID:     *deviceID,
		ElectionID:   election,
		P4Info:       info,
		DeviceConfig: config,
		SkipPipeline: *skipPipeline,
		Ports:        ports,
		CPUPort:      uint32(*cpuPort),
		Window:       *window,
		Registers:    registers,
	}, cases, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vectors:", err)
		return 2
	}
	if failed > 0 {
		return 1
	}
	return 0
}
