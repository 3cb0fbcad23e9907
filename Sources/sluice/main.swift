print("build check")
