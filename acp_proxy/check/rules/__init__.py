"""Sans-I/O rules of the rule engine, one module per section of the spec digest."""
