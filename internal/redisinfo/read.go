package redisinfo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis/go-redis/v9"
)

// Infoer is what Read needs of a client (redis.Cmdable has it).
type Infoer interface {
	Info(ctx context.Context, sections ...string) *redis.StringCmd
}

// Read runs INFO on c and parses it with the exporter's bounded reader,
// for the readers beside the collectors: the change watch, the burst
// governor and the burst report.
func Read(ctx context.Context, c Infoer) (Info, error) {
	return ReadKeys(ctx, c, nil)
}

// ReadKeys is Read keeping only the fields keep takes (all when nil): see
// ParseKeys.
func ReadKeys(ctx context.Context, c Infoer, keep func(field string) bool) (Info, error) {
	s, err := c.Info(ctx).Result()
	if err != nil {
		return nil, CommandErr("INFO", err)
	}
	info, _, err := ParseBounded(s, keep)
	return info, err
}

// CommandErr wraps the error of a Redis command; a command refused by ACL
// (NOPERM) or renamed away (unknown command) is "not available here"
// (host.ErrNoData, as for the host's files), logged at debug, not an alarm.
func CommandErr(cmd string, err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		if strings.HasPrefix(msg, "NOPERM") || strings.HasPrefix(msg, "ERR unknown command") ||
			strings.HasPrefix(msg, "ERR unknown subcommand") {
			return fmt.Errorf("%s refused: %w (%s)", cmd, host.ErrNoData, firstWord(msg))
		}
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}
