// Package exposition is what stands between the prober's collectors and
// client_golang's /metrics handler (promhttp) that is not stock
// client_golang: the registry that lets the big collectors build their
// own families (Registry) and the family building, order and duplicate
// check they use (Builder, Order, Slab, SortFamilies, Normalize). Each
// part gives what client_golang gives, series for series, and says in its
// comment why it is hand-written; clientgolang.go lists what of
// client_golang and client_model the parts rely on, and its test fails
// when an upgrade changes one of them.
package exposition
