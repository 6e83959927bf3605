package collector

// THPMode is one transparent-huge-pages setting: the modes the kernel offers
// and the active one (the bracketed word).
type THPMode struct {
	Modes  []string
	Active string
}
