from fake_server.cli import main

main()
