from checkrein.cli.main import main

main()
