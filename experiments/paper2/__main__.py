from experiments.paper2.reproduce import main

main()
