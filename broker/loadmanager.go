package broker

// LoadManager returns the load manager of the broker's cluster
// (WithLoadManager; ModularLoadManager by default, and for a lone broker).
func (b *Broker) LoadManager() LoadManager { return b.cfg.loadManager }
