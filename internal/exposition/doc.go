// Package exposition is everything between the prober's collectors and
// the bytes of a /metrics response that is not stock client_golang: the
// registry that lets the big collectors build their own families
// (Registry), the family building, order and duplicate check they use
// (Builder, Order, Slab, SortFamilies, Normalize), the protobuf encoder
// (ProtoEncoder) and the HTTP handler (Handler). Each part gives what
// client_golang gives, byte for byte or series for series, and says in
// its comment why it is hand-written; clientgolang.go lists what of
// client_golang, client_model and expfmt the parts rely on, and its test
// fails when an upgrade changes one of them.
package exposition
