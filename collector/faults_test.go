package collector

import "errors"

func isNoData(err error) bool { return errors.Is(err, ErrNoData) }
