from experiments.paper1.reproduce import main

main()
