package cliutil

import "github.com/urfave/cli/v3"

// OnceOrInterval reads the flags every cron job shares: --once (one pass, for cron) or
// --interval DURATION (continuous), exactly one of them, and --now, which only a single
// pass may take (a continuous run follows the clock). It returns the interval in
// seconds (0 with --once) and the time of the first pass.
func OnceOrInterval(cmd *cli.Command) (once bool, interval, now float64, err error) {
	once = cmd.Bool("once")
	if s := cmd.String("interval"); s != "" {
		v, err := ParseDuration(s)
		if err != nil {
			return false, 0, 0, Usagef("--interval: %v", err)
		}
		if !(v > 0) {
			return false, 0, 0, Usagef("--interval: must be > 0, got %s", s)
		}
		interval = v
	}
	switch {
	case once && interval > 0:
		return false, 0, 0, Usagef("--once and --interval: give one")
	case !once && interval == 0:
		return false, 0, 0, Usagef("want --once (one pass, for cron) or --interval DURATION (continuous)")
	}
	if cmd.IsSet(FlagNow) && !once {
		return false, 0, 0, Usagef("--now needs --once (a continuous run follows the clock)")
	}
	if now, err = Now(cmd); err != nil {
		return false, 0, 0, err
	}
	return once, interval, now, nil
}
