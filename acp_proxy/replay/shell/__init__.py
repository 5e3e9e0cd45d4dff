"""The I/O shells of replay: the only place replay touches descriptors, processes and signals."""
