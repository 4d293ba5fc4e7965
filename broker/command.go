package broker

// CommandType is the kind of a Pulsar binary protocol command, by the name
// PulsarApi.proto gives it in BaseCommand.Type ("SUBSCRIBE", "ACK",
// "REDELIVER_UNACKNOWLEDGED_MESSAGES"…): what a Fault, a hold, FailNext and
// DelayReplies match. Only the commands a client sends reach a fault.
type CommandType string

// The protocol's command types, each named Command plus the type's name in
// CamelCase (REDELIVER_UNACKNOWLEDGED_MESSAGES is
// CommandRedeliverUnacknowledgedMessages, as Pulsar's own classes name the
// commands).
const (
	CommandConnect                         CommandType = "CONNECT"
	CommandConnected                       CommandType = "CONNECTED"
	CommandSubscribe                       CommandType = "SUBSCRIBE"
	CommandProducer                        CommandType = "PRODUCER"
	CommandSend                            CommandType = "SEND"
	CommandSendReceipt                     CommandType = "SEND_RECEIPT"
	CommandSendError                       CommandType = "SEND_ERROR"
	CommandMessage                         CommandType = "MESSAGE"
	CommandAck                             CommandType = "ACK"
	CommandFlow                            CommandType = "FLOW"
	CommandUnsubscribe                     CommandType = "UNSUBSCRIBE"
	CommandSuccess                         CommandType = "SUCCESS"
	CommandError                           CommandType = "ERROR"
	CommandCloseProducer                   CommandType = "CLOSE_PRODUCER"
	CommandCloseConsumer                   CommandType = "CLOSE_CONSUMER"
	CommandProducerSuccess                 CommandType = "PRODUCER_SUCCESS"
	CommandPing                            CommandType = "PING"
	CommandPong                            CommandType = "PONG"
	CommandRedeliverUnacknowledgedMessages CommandType = "REDELIVER_UNACKNOWLEDGED_MESSAGES"
	CommandPartitionedMetadata             CommandType = "PARTITIONED_METADATA"
	CommandPartitionedMetadataResponse     CommandType = "PARTITIONED_METADATA_RESPONSE"
	CommandLookup                          CommandType = "LOOKUP"
	CommandLookupResponse                  CommandType = "LOOKUP_RESPONSE"
	CommandConsumerStats                   CommandType = "CONSUMER_STATS"
	CommandConsumerStatsResponse           CommandType = "CONSUMER_STATS_RESPONSE"
	CommandReachedEndOfTopic               CommandType = "REACHED_END_OF_TOPIC"
	CommandSeek                            CommandType = "SEEK"
	CommandGetLastMessageID                CommandType = "GET_LAST_MESSAGE_ID"
	CommandGetLastMessageIDResponse        CommandType = "GET_LAST_MESSAGE_ID_RESPONSE"
	CommandActiveConsumerChange            CommandType = "ACTIVE_CONSUMER_CHANGE"
	CommandGetTopicsOfNamespace            CommandType = "GET_TOPICS_OF_NAMESPACE"
	CommandGetTopicsOfNamespaceResponse    CommandType = "GET_TOPICS_OF_NAMESPACE_RESPONSE"
	CommandGetSchema                       CommandType = "GET_SCHEMA"
	CommandGetSchemaResponse               CommandType = "GET_SCHEMA_RESPONSE"
	CommandAuthChallenge                   CommandType = "AUTH_CHALLENGE"
	CommandAuthResponse                    CommandType = "AUTH_RESPONSE"
	CommandAckResponse                     CommandType = "ACK_RESPONSE"
	CommandGetOrCreateSchema               CommandType = "GET_OR_CREATE_SCHEMA"
	CommandGetOrCreateSchemaResponse       CommandType = "GET_OR_CREATE_SCHEMA_RESPONSE"
	CommandNewTxn                          CommandType = "NEW_TXN"
	CommandNewTxnResponse                  CommandType = "NEW_TXN_RESPONSE"
	CommandAddPartitionToTxn               CommandType = "ADD_PARTITION_TO_TXN"
	CommandAddPartitionToTxnResponse       CommandType = "ADD_PARTITION_TO_TXN_RESPONSE"
	CommandAddSubscriptionToTxn            CommandType = "ADD_SUBSCRIPTION_TO_TXN"
	CommandAddSubscriptionToTxnResponse    CommandType = "ADD_SUBSCRIPTION_TO_TXN_RESPONSE"
	CommandEndTxn                          CommandType = "END_TXN"
	CommandEndTxnResponse                  CommandType = "END_TXN_RESPONSE"
	CommandEndTxnOnPartition               CommandType = "END_TXN_ON_PARTITION"
	CommandEndTxnOnPartitionResponse       CommandType = "END_TXN_ON_PARTITION_RESPONSE"
	CommandEndTxnOnSubscription            CommandType = "END_TXN_ON_SUBSCRIPTION"
	CommandEndTxnOnSubscriptionResponse    CommandType = "END_TXN_ON_SUBSCRIPTION_RESPONSE"
	CommandTcClientConnectRequest          CommandType = "TC_CLIENT_CONNECT_REQUEST"
	CommandTcClientConnectResponse         CommandType = "TC_CLIENT_CONNECT_RESPONSE"
	CommandWatchTopicList                  CommandType = "WATCH_TOPIC_LIST"
	CommandWatchTopicListSuccess           CommandType = "WATCH_TOPIC_LIST_SUCCESS"
	CommandWatchTopicUpdate                CommandType = "WATCH_TOPIC_UPDATE"
	CommandWatchTopicListClose             CommandType = "WATCH_TOPIC_LIST_CLOSE"
	CommandTopicMigrated                   CommandType = "TOPIC_MIGRATED"
)
