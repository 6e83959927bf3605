// Command printversion prints version.Print after buildinfo.Fill, as the
// prober's --version does; the package's test builds it with plain
// `go build`, no linker flags.
package main

import (
	"fmt"

	"github.com/prometheus/common/version"

	"github.com/redis-prober/redis-prober/internal/buildinfo"
)

func main() {
	buildinfo.Fill()
	fmt.Println(version.Print("printversion"))
}
