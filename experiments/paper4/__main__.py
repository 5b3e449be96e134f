from experiments.paper4.reproduce import main

main()
