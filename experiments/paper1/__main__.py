from experiments.paper1.reproduce import main

if __name__ == "__main__":  # not when a spawned worker imports it
    main()
