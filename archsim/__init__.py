"""archsim: simulate deep-learning accelerators, generate their RTL, check one against the other."""
