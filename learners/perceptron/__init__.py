"""The multitask Perceptron family and its Perceptron / Passive-Aggressive baselines."""
