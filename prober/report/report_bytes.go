package report

import "github.com/redis-prober/redis-prober/internal/bytesize"

// iecBytes is bytesize.IEC: the report's sizes (256 MiB), as the burst's
// governor words them in its messages.
var iecBytes = bytesize.IEC
