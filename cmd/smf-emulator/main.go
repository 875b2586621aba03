// Command smf-emulator is the N4 side of an SMF (internal/smf): it associates with a UPF's N4
// endpoint, establishes one MA PDU session with MARs, keeps the association up (heartbeats),
// modifies one of the session's MARs (--modify-mar) to --modify-steering on SIGUSR1, prints the
// session's usage reports (with --usage-period: a URR on every PDR, reported every period), and
// on Ctrl-C deletes the session (printing its last usage) and releases the association.
//
//	smf-emulator --upf=127.0.0.1:8805 --imsi=001010000000002 --ue=10.60.0.22 \
//	    --ue-3gpp=10.45.0.2 --ue-non3gpp=203.0.113.12 --gnb=198.51.100.10 --dl-teid=8202 \
//	    --steering=load-balance:50 --app='100|smallest-delay|permit out 17 from 198.18.30.0/24 to assigned'
//
// In a 5G core the UE learns its ATSSS rules over NAS; here, with --kubeconfig and --node-name,
// the emulator sets spec.ue.nodeName of the session the UPF made (field manager
// junction-smf-emulator), which is how Junction's UE agent on that node takes them (docs/n4.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/smf"
)

type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "smf-emulator:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		upf, local, nodeID, imsi, ue, ue3, ueN, gnb, steering, modify string
		kubeconfig, namespace, upfName, nodeName                      string
		dlTEID, modifyMAR, qfi                                        uint
		apps                                                          stringList
		usagePeriod                                                   time.Duration
		mbrUL, mbrDL                                                  uint64
	)
	flag.StringVar(&upf, "upf", "127.0.0.1:8805", "The UPF's N4 address.")
	flag.StringVar(&local, "local", "127.0.0.1:0", "The SMF's own N4 address.")
	flag.StringVar(&nodeID, "node-id", "smf.junction.local", "The SMF's PFCP Node ID.")
	flag.StringVar(&imsi, "imsi", "", "The UE's IMSI (User ID); empty: none.")
	flag.StringVar(&ue, "ue", "", "The MA PDU session's UE IP address (Junction's session address; required).")
	flag.StringVar(&ue3, "ue-3gpp", "", "The UE's address on its 3GPP leg (required).")
	flag.StringVar(&ueN, "ue-non3gpp", "", "The UE's address on its non-3GPP leg; empty: 3GPP only.")
	flag.StringVar(&gnb, "gnb", "", "The gNB's N3 address (required).")
	flag.UintVar(&dlTEID, "dl-teid", 0, "The gNB's downlink TEID (required).")
	flag.Uint64Var(&mbrUL, "mbr-ul", 0, "The session's uplink AMBR in kbit/s, as the MBR of its QER (the UPF polices it); 0: none.")
	flag.Uint64Var(&mbrDL, "mbr-dl", 0, "The session's downlink AMBR in kbit/s, as the MBR of its QER; 0: none.")
	flag.UintVar(&qfi, "qfi", 0, "The session's QoS flow, 1-63: a QER with this QFI on every PDR (the UPF marks it on the downlink); 0: no QER.")
	flag.StringVar(&steering, "steering", "smallest-delay", "The MAR of all traffic no --app describes (smf.ParseSteering's syntax).")
	flag.Var(&apps, "app", "A downlink PDR with an SDF filter and its own MAR: '<precedence>|<steering>|<flow description>' (repeatable).")
	flag.StringVar(&modify, "modify-steering", "", "The steering of MAR --modify-mar after a Session Modification, sent on SIGUSR1.")
	flag.UintVar(&modifyMAR, "modify-mar", uint(smf.MARDefault), "The MAR SIGUSR1 modifies: 1 is the default MAR, 2 the first --app's, and so on.")
	flag.DurationVar(&usagePeriod, "usage-period", 0, "Measure the session's usage (a URR on every PDR) and have the UPF report it this often; 0: no URR.")
	flag.StringVar(&kubeconfig, "kubeconfig", "", "With --node-name: the cluster whose ATSSSSession gets spec.ue.nodeName.")
	flag.StringVar(&namespace, "namespace", "default", "The UPF's namespace.")
	flag.StringVar(&upfName, "upf-name", "", "The UserPlaneFunction's name (with --node-name).")
	flag.StringVar(&nodeName, "node-name", "", "The Kubernetes node whose UE agent serves the session.")
	flag.Parse()

	s, err := session(imsi, ue, ue3, ueN, gnb, uint32(dlTEID), steering, apps)
	if err != nil {
		return err
	}
	if usagePeriod > 0 {
		s.URR = &smf.URR{Period: usagePeriod}
	}
	if qfi > 63 {
		return fmt.Errorf("--qfi %d: a QFI has 6 bits (1-63; 0: none)", qfi)
	}
	s.QFI = uint8(qfi)
	s.MBRUL, s.MBRDL = mbrUL, mbrDL
	upfAddr, err := netip.ParseAddrPort(upf)
	if err != nil {
		return fmt.Errorf("--upf: %w", err)
	}
	localAddr, err := netip.ParseAddrPort(local)
	if err != nil {
		return fmt.Errorf("--local: %w", err)
	}
	var next smf.Steering
	if modify != "" {
		if next, err = smf.ParseSteering(modify); err != nil {
			return fmt.Errorf("--modify-steering: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	c, err := smf.Dial(localAddr, upfAddr, nodeID)
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.Associate(ctx)
	if err != nil {
		return fmt.Errorf("Association Setup: %w", err)
	}
	if cause := resp.Cause(); cause != ie.CauseRequestAccepted {
		return fmt.Errorf("Association Setup refused with cause %d", cause)
	}
	fmt.Printf("associated with %s as %s\n", upf, nodeID)
	est, err := c.Establish(ctx, s)
	if err != nil {
		return fmt.Errorf("Session Establishment: %w", err)
	}
	name := fmt.Sprintf("n4-%s-%016x", upfName, est.UPSEID)
	fmt.Printf("session established: UP SEID %#x, uplink TEID %#x on %s\n", est.UPSEID, est.UplinkTEID, est.N3)
	if nodeName != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
		if err := junctionv1.AddToScheme(scheme.Scheme); err != nil {
			return err
		}
		k8s, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
		if err != nil {
			return err
		}
		if err := smf.HandToAgent(ctx, k8s, types.NamespacedName{Namespace: namespace, Name: name}, nodeName); err != nil {
			return err
		}
		fmt.Printf("ATSSSSession %s/%s handed to the UE agent on %s\n", namespace, name, nodeName)
	}

	usr1 := make(chan os.Signal, 1)
	if modify != "" {
		signal.Notify(usr1, syscall.SIGUSR1)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	printed := 0
	for {
		select {
		case <-tick.C:
			reports := c.Reports()
			for _, r := range reports[printed:] {
				printUsage("usage report", r.IEs)
			}
			printed = len(reports)
		case <-usr1:
			r, err := c.Modify(ctx, est, c.UpdateMAR(uint16(modifyMAR), next, s.UENon3GPP.IsValid()))
			if err != nil {
				return fmt.Errorf("Session Modification: %w", err)
			}
			fmt.Printf("session modified (MAR %d: %s): cause %d\n", modifyMAR, modify, r.Cause())
		case <-ctx.Done():
			bg, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// On the way out the UPF may be stopping too (make run stops everything at once).
			if r, err := c.Delete(bg, est); err != nil {
				fmt.Printf("session deletion: %v\n", err)
			} else {
				fmt.Printf("session deleted: cause %d\n", r.Cause())
				printUsage("final usage", r.IEs)
			}
			if r, err := c.Release(bg); err != nil {
				fmt.Printf("association release: %v\n", err)
			} else {
				fmt.Printf("association released: cause %d\n", r.Cause())
			}
			return nil
		}
	}
}

func session(imsi, ue, ue3, ueN, gnb string, dlTEID uint32, steering string, apps []string) (smf.MASession, error) {
	s := smf.MASession{IMSI: imsi, DownlinkTEID: dlTEID}
	for _, a := range []struct {
		flag, v string
		dst     *netip.Addr
	}{{"--ue", ue, &s.UEAddr}, {"--ue-3gpp", ue3, &s.UE3GPP}, {"--gnb", gnb, &s.GNB}, {"--ue-non3gpp", ueN, &s.UENon3GPP}} {
		if a.v == "" && a.flag == "--ue-non3gpp" {
			continue
		}
		v, err := netip.ParseAddr(a.v)
		if err != nil || !v.Is4() {
			return s, fmt.Errorf("%s: %q is not an IPv4 address", a.flag, a.v)
		}
		*a.dst = v
	}
	if dlTEID == 0 {
		return s, fmt.Errorf("--dl-teid is required")
	}
	var err error
	if s.Default, err = smf.ParseSteering(steering); err != nil {
		return s, fmt.Errorf("--steering: %w", err)
	}
	for _, a := range apps {
		f := strings.SplitN(a, "|", 3)
		if len(f) != 3 {
			return s, fmt.Errorf("--app %q: want '<precedence>|<steering>|<flow description>'", a)
		}
		prec, err := strconv.ParseUint(f[0], 10, 32)
		if err != nil {
			return s, fmt.Errorf("--app %q: precedence: %w", a, err)
		}
		st, err := smf.ParseSteering(f[1])
		if err != nil {
			return s, fmt.Errorf("--app %q: %w", a, err)
		}
		s.Apps = append(s.Apps, smf.App{Precedence: uint32(prec), Steering: st, Flow: f[2]})
	}
	return s, nil
}

func printUsage(what string, ies []*ie.IE) {
	reports, err := smf.UsageReports(ies)
	if err != nil {
		fmt.Printf("%s: %v\n", what, err)
	}
	for _, u := range reports {
		fmt.Printf("%s: %s\n", what, u)
	}
}
