// Command redis-prober is a Prometheus exporter and continuous synthetic
// prober for Redis latency. main only parses the command line, wires the
// parts and handles signals; the work lives in engine, prober and collector.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/buildinfo"
	"github.com/redis-prober/redis-prober/internal/safetext"
)

const exporterName = "redis-prober"

// defaultGCPercent is the Go GC target when GOGC is not set: the heap may
// grow to 1.5 times what is live instead of twice. The prober's live heap
// grows with its targets while its GC's CPU stays small, so memory is the
// scarcer of the two, as it is for Prometheus (which sets 75); the figures
// are in docs/performance.md, "Measured reasons". GOGC in the environment
// wins.
const defaultGCPercent = 50

func main() {
	buildinfo.Fill()
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(defaultGCPercent)
	}
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one sub-command: it declares its flags on the clause and
// returns the function that runs it once parsing is done.
type command func(ctx context.Context, env *cliEnv) error

// cliEnv is what every sub-command gets from main.
type cliEnv struct {
	stdout, stderr io.Writer
	logConfig      *promslog.Config
}

func realMain(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New(exporterName, "Prometheus exporter and continuous synthetic prober for Redis latency.")
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')
	app.UsageTemplate(usageTemplate)
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.Terminate(nil) // --help and --version return here instead of exiting deep inside kingpin

	env := &cliEnv{stdout: stdout, stderr: stderr, logConfig: &promslog.Config{}}
	promslogflag.AddFlags(app, env.logConfig)

	commands := addCommands(app)

	selected, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: error: %s\n", exporterName, err)
		return 2
	}
	if helpOrVersion(args) || selected == "help" {
		return 0
	}
	run, ok := commands[selected]
	if !ok {
		fmt.Fprintf(stderr, "%s: error: unknown command %q\n", exporterName, selected)
		return 2
	}

	// go-redis logs pool trouble through its own package logger; the same
	// faults already reach our logs and metrics once, so its lines go to
	// debug instead of repeating on stderr in another format.
	redis.SetLogger(redisLogger{promslog.New(env.logConfig)})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, env); err != nil {
		// A verdict the command's output already gave (compare's
		// inconclusive) is no error: its exit code alone.
		var verdict interface{ SilentExitCode() int }
		if errors.As(err, &verdict) {
			return verdict.SilentExitCode()
		}
		// An error may quote a Redis reply: escape what a terminal would obey.
		fmt.Fprintf(stderr, "%s: error: %s\n", exporterName, safetext.Printable(err.Error()))
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// usageTemplate is kingpin's, plus the flags of the default command (run)
// when no command is named: `redis-prober --help` lists what `redis-prober`
// alone accepts.
var usageTemplate = kingpin.DefaultUsageTemplate + `{{if not .Context.SelectedCommand -}}
{{range .App.Commands}}{{if .Default -}}
Flags of "{{.Name}}", the default command (also: {{$.App.Name}} {{.Name}} --help):
{{.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{end}}{{end -}}
{{end -}}
`

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

func helpOrVersion(args []string) bool {
	for _, a := range args {
		switch a {
		case "--help", "-h", "--version", "--help-long", "--help-man", "--completion-bash":
			return true
		}
	}
	return false
}
