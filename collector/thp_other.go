//go:build !linux

package collector

func readTHP(_ Paths, file string) (THPMode, error) {
	return THPMode{}, errNotHere("transparent huge pages " + file)
}

func newTHPCollector(Paths) source { return unavailable("thp") }
