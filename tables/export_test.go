package tables

// ExportHolding is Export holding hold bytes of a trace's start in
// memory; it also says whether the trace was read twice.
var ExportHolding = export

// LiveHoldBytes is Export's hold.
const LiveHoldBytes = liveHoldBytes
