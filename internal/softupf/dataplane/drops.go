package dataplane

import "github.com/junction-atsss/junction/internal/contract"

// DropReason indexes the `drops` counter (docs/pipeline.md, "Drop reasons").
type DropReason = contract.DropReason

// numDropReasons is how many reasons the data plane counts (the counter may be larger).
const numDropReasons = int(contract.DropConsumed) + 1
