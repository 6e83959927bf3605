// Command generate writes the JSON of every redis-prober dashboard into a
// directory (by default dashboards/, run from the repository root):
//
//	go run ./dashboards/cmd/generate [-out dashboards]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/redis-prober/redis-prober/dashboards"
)

func main() {
	out := flag.String("out", "dashboards", "directory to write the dashboard JSON files into")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func generate(dir string) error {
	for _, s := range dashboards.All() {
		b, err := dashboards.Render(s)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, s.File)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Println("wrote", path)
	}
	return nil
}
