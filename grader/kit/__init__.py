"""Building and proving the kit: the candidate's bundle, the schemas, the chaff and the selftest."""
