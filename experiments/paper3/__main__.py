from experiments.paper3.reproduce import main

main()
