"""The training engine: models, batched local training with torch.func, evaluation passes and the simulated clock."""
