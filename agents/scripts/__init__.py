"""Entry points: training, visualization, configs and networks."""
