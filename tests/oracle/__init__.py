"""Test oracles backed by the real DeepSpeed: config verdicts, config mutations, initialize-time cases."""
